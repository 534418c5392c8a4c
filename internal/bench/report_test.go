package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func testReport(mode string) *Report {
	opts := DefaultOptions()
	opts.Mode = mode
	var s Stats
	s.Sentences.Store(2_000_000)
	s.Words.Store(16_000_000)
	if mode == ModeAck {
		s.Acked.Store(1_999_000)
		s.Failed.Store(10)
		s.Timeouts.Store(5)
		for range 100 {
			s.Latency.Record(time.Millisecond)
		}
	}
	return NewReport(opts, &s, Measurements{
		Window:          2 * time.Second,
		Drain:           100 * time.Millisecond,
		WindowSentences: 1_900_000,
		WindowWords:     15_200_000,
		CPU:             3 * time.Second,
		MaxRSS:          64 << 20,
		RSSSamples:      []int64{10 << 20, 20 << 20, 30 << 20, 25 << 20},
	})
}

func TestReportJSONKeys(t *testing.T) {
	required := []string{
		"mode", "runner", "duration_s", "sentences", "words", "sentences_per_sec",
		"words_per_sec", "acked", "failed", "timeouts", "latency_ms", "cpu_seconds",
		"cpu_seconds_per_million_sentences", "max_rss_bytes", "rss_samples_bytes",
		"spouts", "splitters", "counters", "ackers", "rate", "go_version", "gomaxprocs",
		"gogc", "heap_mb", "tuple_reuse",
	}
	var buf bytes.Buffer
	if err := testReport(ModeAck).WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("report is not one JSON object: %v\n%s", err, buf.Bytes())
	}
	for _, k := range required {
		if _, ok := doc[k]; !ok {
			t.Errorf("report JSON has no key %q:\n%s", k, buf.Bytes())
		}
	}
	lat, _ := doc["latency_ms"].(map[string]any)
	for _, k := range []string{"p50", "p99", "p999"} {
		if _, ok := lat[k]; !ok {
			t.Errorf("latency_ms has no key %q: %v", k, doc["latency_ms"])
		}
	}

	buf.Reset()
	if err := testReport(ModeNoAck).WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var noack struct {
		LatencyMS *Latencies `json:"latency_ms"`
	}
	if err := json.Unmarshal(buf.Bytes(), &noack); err != nil {
		t.Fatal(err)
	}
	if l := noack.LatencyMS; l == nil || l.P50 != 0 || l.P99 != 0 || l.P999 != 0 {
		t.Errorf("noack report latency_ms = %+v, want present and all 0 (nothing tracked):\n%s", l, buf.Bytes())
	}
}

func TestNewReport(t *testing.T) {
	r := testReport(ModeAck)
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	near("sentences_per_sec", r.SentencesPerSec, 950_000) // window counters / window
	near("words_per_sec", r.WordsPerSec, 7_600_000)
	near("cpu_seconds", r.CPUSeconds, 3)
	near("cpu_seconds_per_million_sentences", r.CPUSecondsPerMillionSentences, 1.5) // final totals
	near("duration_s", r.DurationS, 2)
	near("drain_s", r.DrainS, 0.1)
	if r.Sentences != 2_000_000 || r.Words != 16_000_000 || r.Acked != 1_999_000 || r.Failed != 10 || r.Timeouts != 5 {
		t.Errorf("totals = %d/%d/%d/%d/%d, want the final Stats 2000000/16000000/1999000/10/5",
			r.Sentences, r.Words, r.Acked, r.Failed, r.Timeouts)
	}
	if r.LatencyMS == nil || math.Abs(r.LatencyMS.P99-1) > 0.01 {
		t.Errorf("latency_ms = %+v, want p99 ≈ 1", r.LatencyMS)
	}
	want := RSSSummary{Min: 25 << 20, Max: 30 << 20, Last: 25 << 20, WarmupSamples: 2}
	if r.RSSAfterWarmup == nil || *r.RSSAfterWarmup != want {
		t.Errorf("rss_after_warmup_bytes = %+v, want %+v", r.RSSAfterWarmup, want)
	}

	opts := DefaultOptions()
	opts.Runner, opts.Spouts = RunnerPlain, 4
	p := NewReport(opts, &Stats{}, Measurements{})
	if p.Spouts != 1 || p.Ackers != 0 || p.CPUSecondsPerMillionSentences != 0 || p.RSSSamplesBytes == nil {
		t.Errorf("plain report with no data = %+v, want spouts 1, ackers 0, no division by zero, rss_samples_bytes []", p)
	}
}

func TestReportTable(t *testing.T) {
	var buf bytes.Buffer
	if err := testReport(ModeAck).WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2,000,000", "950,000/s", "p99 1.00", "1.500s per million sentences"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table does not contain %q:\n%s", want, buf.String())
		}
	}
}

// testWorkersReport is a three-worker run whose workers reported RSS out of order.
func testWorkersReport() *Report {
	opts := DefaultOptions()
	opts.Workers = 3
	var s Stats
	s.Sentences.Store(1000)
	s.WireBytes.Store(30_000)
	s.WireTuples.Store(1200)
	for _, w := range []struct {
		worker int
		rss    []int64
	}{
		{2, []int64{50 << 20, 60 << 20, 70 << 20, 65 << 20}},
		{0, []int64{10 << 20}},
		{1, []int64{30 << 20, 20 << 20, 40 << 20}},
	} {
		for _, v := range w.rss {
			s.RecordWorkerRSS(w.worker, v)
		}
	}
	return NewReport(opts, &s, Measurements{Window: time.Second, CPU: 4 * time.Second})
}

func TestReportWorkers(t *testing.T) {
	var buf bytes.Buffer
	if err := testWorkersReport().WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Workers           *int        `json:"workers"`
		WireBytes         *int64      `json:"wire_bytes"`
		WireTuples        *int64      `json:"wire_tuples"`
		WireBytesPerTuple *float64    `json:"wire_bytes_per_tuple"`
		WorkerRSS         []WorkerRSS `json:"worker_rss"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Workers == nil || *doc.Workers != 3 {
		t.Errorf("workers = %v, want 3", doc.Workers)
	}
	if doc.WireBytes == nil || *doc.WireBytes != 30_000 || doc.WireTuples == nil || *doc.WireTuples != 1200 {
		t.Errorf("wire_bytes, wire_tuples = %v, %v; want 30000, 1200", doc.WireBytes, doc.WireTuples)
	}
	if doc.WireBytesPerTuple == nil || *doc.WireBytesPerTuple != 25 {
		t.Errorf("wire_bytes_per_tuple = %v, want 30000 / 1200 = 25", doc.WireBytesPerTuple)
	}
	want := []WorkerRSS{
		{Worker: 0, SamplesBytes: []int64{10 << 20},
			AfterWarmup: &RSSSummary{Min: 10 << 20, Max: 10 << 20, Last: 10 << 20, WarmupSamples: 0}},
		{Worker: 1, SamplesBytes: []int64{30 << 20, 20 << 20, 40 << 20},
			AfterWarmup: &RSSSummary{Min: 40 << 20, Max: 40 << 20, Last: 40 << 20, WarmupSamples: 2}},
		{Worker: 2, SamplesBytes: []int64{50 << 20, 60 << 20, 70 << 20, 65 << 20},
			AfterWarmup: &RSSSummary{Min: 65 << 20, Max: 70 << 20, Last: 65 << 20, WarmupSamples: 2}},
	}
	if !reflect.DeepEqual(doc.WorkerRSS, want) {
		t.Errorf("worker_rss =\n%s\nwant (in worker order, summarised like rss_after_warmup_bytes)\n%s", jsonString(doc.WorkerRSS), jsonString(want))
	}

	// One worker: the wire is empty, nothing is divided by zero, and worker_rss is left out.
	buf.Reset()
	if err := testReport(ModeAck).WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var one map[string]any
	if err := json.Unmarshal(buf.Bytes(), &one); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]float64{"workers": 1, "wire_bytes": 0, "wire_tuples": 0, "wire_bytes_per_tuple": 0} {
		if got, ok := one[k].(float64); !ok || got != want {
			t.Errorf("one-worker report %q = %v, want %v", k, one[k], want)
		}
	}
	if _, ok := one["worker_rss"]; ok {
		t.Errorf("one-worker report has worker_rss %v, want it left out", one["worker_rss"])
	}
}

func jsonString(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

func TestReportTableWorkers(t *testing.T) {
	var buf bytes.Buffer
	if err := testWorkersReport().WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	table := buf.String()
	for _, want := range []string{
		"3 processes", "wire 30,000 bytes in 1,200 tuples", "25.0 bytes per tuple",
		"min 10 MiB  max 10 MiB  last 10 MiB\n",
		"min 40 MiB  max 40 MiB  last 40 MiB (after 2s warm-up)",
		"min 65 MiB  max 70 MiB  last 65 MiB (after 2s warm-up)",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table does not contain %q:\n%s", want, table)
		}
	}
	w0, w1, w2 := strings.Index(table, "worker 0 rss"), strings.Index(table, "worker 1 rss"), strings.Index(table, "worker 2 rss")
	if w0 < 0 || w1 < w0 || w2 < w1 {
		t.Errorf("table rows worker 0/1/2 rss at %d/%d/%d, want all present in worker order:\n%s", w0, w1, w2, table)
	}

	buf.Reset()
	if err := testReport(ModeAck).WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "workers") || strings.Contains(buf.String(), "wire") {
		t.Errorf("one-worker table shows workers or wire:\n%s", buf.String())
	}
}

func TestCommas(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {6498760, "6,498,760"}, {-1234567, "-1,234,567"}}
	for _, tt := range tests {
		if got := Commas(tt.in); got != tt.want {
			t.Errorf("Commas(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
