package stock

import (
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gale-stream/gale/internal/cli/clitest"
)

// benchReport is the part of `gale bench wordcount --json` a user relies on.
type benchReport struct {
	Mode            string  `json:"mode"`
	Runner          string  `json:"runner"`
	TupleReuse      bool    `json:"tuple_reuse"`
	DurationS       float64 `json:"duration_s"`
	Sentences       int64   `json:"sentences"`
	Words           int64   `json:"words"`
	SentencesPerSec float64 `json:"sentences_per_sec"`
	WordsPerSec     float64 `json:"words_per_sec"`
	Acked           int64   `json:"acked"`
	Failed          int64   `json:"failed"`
	Timeouts        int64   `json:"timeouts"`
	Unfinished      int64   `json:"unfinished"`
	LatencyMS       *struct {
		P50  float64 `json:"p50"`
		P99  float64 `json:"p99"`
		P999 float64 `json:"p999"`
	} `json:"latency_ms"`
	CPUSeconds  float64 `json:"cpu_seconds"`
	MaxRSSBytes int64   `json:"max_rss_bytes"`
}

// wordsPerSentence is the bench workload's sentence length (bench.WordsPerSentence),
// spelled out as the user reads it in the help.
const wordsPerSentence = 8

// TestBenchWordcountJSON runs each runner and mode briefly and checks the one JSON
// document on stdout: the keys the issue asks for and the invariants a user relies on.
func TestBenchWordcountJSON(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		mode   string
		runner string
		reuse  bool // tuple_reuse reported
	}{
		{name: "gale ack", args: []string{"--mode", "ack"}, mode: "ack", runner: "gale", reuse: true},
		{name: "gale ack without reuse", args: []string{"--mode", "ack", "--tuple-reuse=false"}, mode: "ack", runner: "gale"},
		{name: "gale noack", args: []string{"--mode", "noack"}, mode: "noack", runner: "gale", reuse: true},
		{name: "plain ack", args: []string{"--runner", "plain"}, mode: "ack", runner: "plain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"bench", "wordcount", "--duration", "300ms", "--json"}, tt.args...)
			code, stdout, _ := runGale(t, args...)
			if code != exitOK {
				t.Fatalf("exit code: got %d, want %d", code, exitOK)
			}
			var keys map[string]json.RawMessage
			clitest.DecodeOne(t, stdout, &keys)
			want := []string{"mode", "duration_s", "sentences", "words", "sentences_per_sec", "words_per_sec",
				"acked", "failed", "latency_ms", "cpu_seconds", "max_rss_bytes"}
			for _, k := range want {
				if _, ok := keys[k]; !ok {
					t.Errorf("JSON report has no key %q", k)
				}
			}
			var r benchReport
			clitest.DecodeOne(t, stdout, &r)
			t.Logf("report: %+v", r)

			if r.Mode != tt.mode || r.Runner != tt.runner || r.TupleReuse != tt.reuse {
				t.Errorf("mode, runner, tuple_reuse: got %q, %q, %v, want %q, %q, %v",
					r.Mode, r.Runner, r.TupleReuse, tt.mode, tt.runner, tt.reuse)
			}
			if r.DurationS < 0.3 {
				t.Errorf("duration_s: got %v, want ≥ 0.3 (--duration 300ms)", r.DurationS)
			}
			if r.Sentences <= 0 || r.Words <= 0 || r.SentencesPerSec <= 0 || r.WordsPerSec <= 0 {
				t.Errorf("sentences %d, words %d, sentences/s %v, words/s %v: want all > 0",
					r.Sentences, r.Words, r.SentencesPerSec, r.WordsPerSec)
			}
			if r.CPUSeconds <= 0 || r.MaxRSSBytes <= 0 {
				t.Errorf("cpu_seconds %v, max_rss_bytes %d: want both > 0", r.CPUSeconds, r.MaxRSSBytes)
			}
			if r.Failed != 0 || r.Timeouts != 0 {
				t.Errorf("failed %d, timeouts %d: want 0, 0", r.Failed, r.Timeouts)
			}
			// Words can never exceed what the sentences hold.
			if r.Words > wordsPerSentence*r.Sentences {
				t.Errorf("words: got %d, more than %d × %d sentences", r.Words, wordsPerSentence, r.Sentences)
			}

			if tt.mode == "noack" {
				// The drain delivers what is queued at the end, acking or not.
				if r.Words != wordsPerSentence*r.Sentences {
					t.Errorf("words: got %d, want %d × %d sentences (drained)", r.Words, wordsPerSentence, r.Sentences)
				}
				if r.Acked != 0 || r.Unfinished != 0 {
					t.Errorf("acked %d, unfinished %d: want 0, 0 in noack mode", r.Acked, r.Unfinished)
				}
				if l := r.LatencyMS; l == nil || l.P50 != 0 || l.P99 != 0 || l.P999 != 0 {
					t.Errorf("latency_ms in noack mode: got %s, want present and all 0", keys["latency_ms"])
				}
				return
			}
			// Ack mode: every sentence's tree is acked, or still in flight when the drain
			// ended (none should be: the drain timeout is 5 s).
			if r.Acked+r.Unfinished != r.Sentences {
				t.Errorf("acked %d + unfinished %d: got %d, want sentences %d",
					r.Acked, r.Unfinished, r.Acked+r.Unfinished, r.Sentences)
			}
			if r.Unfinished == 0 && r.Words != wordsPerSentence*r.Sentences {
				t.Errorf("words: got %d, want %d × %d sentences = %d (every tree acked, so every word counted)",
					r.Words, wordsPerSentence, r.Sentences, wordsPerSentence*r.Sentences)
			}
			if r.Unfinished != 0 {
				t.Errorf("unfinished: got %d after a 300ms run, want 0 (the drain should finish)", r.Unfinished)
			}
			if l := r.LatencyMS; l == nil {
				t.Errorf("latency_ms: missing in ack mode")
			} else if !(0 < l.P50 && l.P50 <= l.P99 && l.P99 <= l.P999) {
				t.Errorf("latency_ms: got p50 %v, p99 %v, p999 %v, want 0 < p50 ≤ p99 ≤ p999", l.P50, l.P99, l.P999)
			}
		})
	}
}

// TestBenchWordcountTable runs without --json for a little over a second: the
// summary table goes to stdout, the live lines (one per second) to stderr.
func TestBenchWordcountTable(t *testing.T) {
	code, stdout, stderr := runGale(t, "bench", "wordcount", "--duration", "1200ms")
	if code != exitOK {
		t.Fatalf("exit code: got %d, want %d", code, exitOK)
	}
	t.Logf("stdout:\n%s", stdout)
	for _, row := range []string{"runner", "duration", "sentences", "words", "acked", "failed", "timeouts", "latency", "cpu", "max rss"} {
		if !hasRow(stdout, row) {
			t.Errorf("summary table has no %q row", row)
		}
	}
	if strings.Contains(stdout, "sentences/s ") || strings.HasPrefix(strings.TrimSpace(stdout), "{") {
		t.Errorf("stdout should hold only the summary table")
	}
	live := 0
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, "sentences/s") && strings.Contains(line, "words/s") && strings.Contains(line, "acked") {
			live++
		}
	}
	if live < 1 {
		t.Errorf("stderr: got %d live lines, want ≥ 1 after 1.2s", live)
	}
}

// hasRow reports whether the table has a line starting with the row name.
func hasRow(table, name string) bool {
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, name+"  ") || strings.HasPrefix(line, name+" ") {
			return true
		}
	}
	return false
}

// TestBenchWordcountWorkers runs the bench in two worker processes (this
// test binary acting as gale) and checks what --workers adds: tuples and
// bytes crossed, each worker's memory, every sentence acked. The run is
// measured from when the workers' spouts are active, so however long the
// workers take to start on a busy machine, it measures something.
func TestBenchWordcountWorkers(t *testing.T) {
	t.Setenv(clitest.MainEnv, "1") // inherited by the worker processes
	code, stdout, _ := runGale(t, "bench", "wordcount", "--workers", "2", "--spouts", "2", "--splitters", "2",
		"--counters", "2", "--ackers", "2", "--duration", "1s", "--json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var r struct {
		benchReport
		StartupS          float64 `json:"startup_s"`
		Replayed          int64   `json:"replayed"`
		Lost              int64   `json:"lost"`
		Workers           int     `json:"workers"`
		WireBytes         int64   `json:"wire_bytes"`
		WireTuples        int64   `json:"wire_tuples"`
		WireBytesPerTuple float64 `json:"wire_bytes_per_tuple"`
		WorkerRSS         []struct {
			Worker       int     `json:"worker"`
			SamplesBytes []int64 `json:"samples_bytes"`
		} `json:"worker_rss"`
		WorkerCPUs [][]int `json:"worker_cpus"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, stdout)
	}
	// --pin-cpus is on by default: with two CPUs or more, each worker
	// has its own.
	if runtime.GOOS == "linux" && runtime.NumCPU() >= 2 {
		if len(r.WorkerCPUs) != 2 || len(r.WorkerCPUs[0]) == 0 || len(r.WorkerCPUs[1]) == 0 ||
			slices.ContainsFunc(r.WorkerCPUs[1], func(c int) bool { return slices.Contains(r.WorkerCPUs[0], c) }) {
			t.Errorf("worker_cpus %v: want two disjoint, non-empty CPU sets", r.WorkerCPUs)
		}
	}
	if r.Workers != 2 || len(r.WorkerRSS) != 2 {
		t.Errorf("workers %d, RSS series for %d workers; want 2 and 2", r.Workers, len(r.WorkerRSS))
	}
	if r.StartupS <= 0 || r.DurationS < 1 {
		t.Errorf("startup_s %v, duration_s %v: want the start-up apart from the 1s measured", r.StartupS, r.DurationS)
	}
	// A tree may time out on a starved machine; then it is replayed. In
	// the end every sentence is acked.
	if r.Sentences == 0 || r.Acked != r.Sentences || r.Lost != 0 || r.Unfinished != 0 || r.Replayed != r.Failed+r.Timeouts {
		t.Errorf("sentences %d, acked %d, lost %d, unfinished %d, replayed %d of failed %d + timeouts %d: want every sentence acked, each failure replayed",
			r.Sentences, r.Acked, r.Lost, r.Unfinished, r.Replayed, r.Failed, r.Timeouts)
	}
	// A replayed sentence's words may be counted twice (those counted
	// before its tree failed).
	if r.Words < r.Sentences*wordsPerSentence || r.Words > (r.Sentences+r.Replayed)*wordsPerSentence ||
		(r.Replayed == 0 && r.Words != r.Sentences*wordsPerSentence) {
		t.Errorf("words %d, want %d × %d sentences (+ up to %d × %d replayed)", r.Words, r.Sentences, wordsPerSentence, r.Replayed, wordsPerSentence)
	}
	if r.WireTuples == 0 || r.WireBytes <= r.WireTuples {
		t.Errorf("wire tuples %d, bytes %d: nothing crossed between the workers", r.WireTuples, r.WireBytes)
	}
	if got := float64(r.WireBytes) / float64(r.WireTuples); got != r.WireBytesPerTuple {
		t.Errorf("wire_bytes_per_tuple %v, want wire_bytes / wire_tuples = %v", r.WireBytesPerTuple, got)
	}
	for _, w := range r.WorkerRSS {
		if len(w.SamplesBytes) == 0 || w.SamplesBytes[0] <= 0 {
			t.Errorf("worker %d: no RSS samples", w.Worker)
		}
	}
}

// TestBenchCompareStats: --compare-stats runs pairs with the metrics on
// and off and prints one JSON document with each pair's ratio; it
// refuses what it cannot compare.
func TestBenchCompareStats(t *testing.T) {
	code, stdout, stderr := runGale(t, "bench", "wordcount", "--duration", "300ms", "--compare-stats", "1", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc struct {
		Pairs []struct {
			On    struct{ Stats bool }
			Off   struct{ Stats bool }
			Ratio float64 `json:"ratio"`
		} `json:"pairs"`
		MedianRatio float64 `json:"median_ratio"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, stdout)
	}
	if len(doc.Pairs) != 1 || !doc.Pairs[0].On.Stats || doc.Pairs[0].Off.Stats || doc.Pairs[0].Ratio <= 0 || doc.MedianRatio != doc.Pairs[0].Ratio {
		t.Errorf("comparison %+v, want one pair, on then off, with its ratio as the median", doc)
	}
	for _, args := range [][]string{
		{"--compare-stats", "1", "--runner", "plain"},
		{"--compare-stats", "-1"},
		{"--compare-stats", "1", "--stats=false"},
		{"--stats=false", "--runner", "plain"},
	} {
		code, _, stderr := runGale(t, append([]string{"bench", "wordcount", "--duration", "300ms"}, args...)...)
		if code != exitUsage || !strings.Contains(stderr, "--") {
			t.Errorf("%v: exit %d (%s), want %d naming the flag", args, code, stderr, exitUsage)
		}
	}
}
