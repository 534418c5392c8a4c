package bench

import (
	"bytes"
	"encoding/json"
	"math"
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

func TestCommas(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {6498760, "6,498,760"}, {-1234567, "-1,234,567"}}
	for _, tt := range tests {
		if got := commas(tt.in); got != tt.want {
			t.Errorf("commas(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
