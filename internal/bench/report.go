package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"text/tabwriter"
	"time"
)

// warmupSamples is how many leading once-a-second samples the "after warm-up"
// figures skip (when there are more than that), so that start-up does not hide a
// steady state: RSSAfterWarmup skips that many RSS samples, LatencyAfterWarmupMS the
// trees completed in that many seconds.
const warmupSamples = 2

// Measurements are what Run measures around a runner, besides its Stats.
type Measurements struct {
	Startup         time.Duration   // from the runner's start until every spout task was active (or start-up ended)
	Activated       bool            // every spout task became active: the window opened
	Window          time.Duration   // from activation until the spouts were told to stop; 0 if never active
	Drain           time.Duration   // from then until the runner had drained and returned
	OpenSentences   int64           // Stats.Sentences when the window opened
	OpenWords       int64           // Stats.Words when the window opened
	WindowSentences int64           // sentences emitted in the window (Stats.Sentences at its close − OpenSentences)
	WindowWords     int64           // words counted in the window
	CPU             time.Duration   // user + system CPU over the run: the process and its waited-for children
	MaxRSS          int64           // peak resident set size of the process, bytes
	RSSSamples      []int64         // resident set size once a second, bytes
	P99PerSecond    []time.Duration // ack mode: complete-latency p99 of the trees completed in each second
	WarmupLatency   *histCounts     // ack mode: the latency histogram after warmupSamples seconds; nil if the run ended sooner (used only when P99PerSecond has more samples)
	AllocBytes      uint64          // bytes allocated on the Go heap over the run
	GCCycles        uint32          // garbage collections over the run
}

// Report is the result of one run, printed as JSON with --json.
//
// Rates are measured over the window (DurationS), which opens when every spout task is
// active, from what the counters gained in it, so neither start-up nor a runner's
// shutdown dilutes them; the totals (Sentences, Words, Acked, ...) are final, after
// the runner drained, and CPUSeconds covers start-up and the drain too.
type Report struct {
	Mode   string `json:"mode"`
	Runner string `json:"runner"`
	// Error, when set, is what went wrong: the run's figures are what it
	// measured before and despite it.
	Error string `json:"error,omitempty"`

	StartupS  float64 `json:"startup_s"` // from the start until every spout task was active
	DurationS float64 `json:"duration_s"`
	DrainS    float64 `json:"drain_s"`

	Sentences       int64   `json:"sentences"`
	Words           int64   `json:"words"`
	SentencesPerSec float64 `json:"sentences_per_sec"`
	WordsPerSec     float64 `json:"words_per_sec"`

	Acked    int64 `json:"acked"`
	Failed   int64 `json:"failed"`
	Timeouts int64 `json:"timeouts"`
	// Unfinished trees were still in flight when the drain ended.
	Unfinished int64 `json:"unfinished"`
	// Replayed counts sentences emitted again after their tree failed or
	// timed out (each such tree counts in Failed or Timeouts).
	Replayed int64 `json:"replayed"`
	// Lost, in ack mode, counts sentences emitted and never acked after the
	// final drain: Unfinished ones, and those of a spout whose worker died
	// with them (the bench's source keeps them in memory only).
	Lost int64 `json:"lost"`
	// LatencyMS is the complete latency in ack mode; in noack mode no tree
	// is tracked and every quantile is 0.
	LatencyMS *Latencies `json:"latency_ms"`
	// LatencyP99MSPerSecond is, in ack mode, the p99 of the trees completed
	// in each second of the run (the live view's p99 column), so that a
	// slow first second or a stall can be told from the steady state; nil
	// in noack mode.
	LatencyP99MSPerSecond []float64 `json:"latency_p99_ms_per_second,omitempty"`
	// LatencyAfterWarmupMS is, in ack mode, LatencyMS over the trees completed
	// after the warm-up (the first warmup_samples seconds, as for RSS): the
	// steady state without start-up. Nil in noack mode or when the run was no
	// longer than the warm-up.
	LatencyAfterWarmupMS *Latencies `json:"latency_after_warmup_ms,omitempty"`

	// CPUSeconds is user + system CPU over the run, of this process and of the
	// child processes it waited for: with Workers > 1 it includes the worker
	// processes.
	CPUSeconds                    float64 `json:"cpu_seconds"`
	CPUSecondsPerMillionSentences float64 `json:"cpu_seconds_per_million_sentences"`
	// AllocBytesPerSentence is Go heap bytes allocated per sentence over the
	// run (the whole process: spouts, framework, bolts, bench); GCCycles is
	// how many collections that took.
	AllocBytesPerSentence float64 `json:"alloc_bytes_per_sentence"`
	GCCycles              uint32  `json:"gc_cycles"`

	MaxRSSBytes     int64       `json:"max_rss_bytes"`
	RSSSamplesBytes []int64     `json:"rss_samples_bytes"`
	RSSAfterWarmup  *RSSSummary `json:"rss_after_warmup_bytes,omitempty"` // nil without samples

	// Workers is the number of worker processes (1: the topology ran in this
	// process). WireBytes and WireTuples are what crossed between workers (bytes
	// written, frames included, and tuples sent to another worker); they are 0
	// with one worker.
	Workers           int     `json:"workers"`
	WireBytes         int64   `json:"wire_bytes"`
	WireTuples        int64   `json:"wire_tuples"`
	WireBytesPerTuple float64 `json:"wire_bytes_per_tuple"` // 0 when no tuple crossed
	// WorkerRSS has an entry per worker that reported RSS samples, in worker order;
	// the report's own RSS fields above are then the launcher's.
	WorkerRSS []WorkerRSS `json:"worker_rss,omitempty"`
	// WorkerCPUs are the CPUs each worker process was bound to, by worker;
	// absent when they were not pinned (--pin-cpus=false, one worker, fewer
	// CPUs than workers).
	WorkerCPUs [][]int `json:"worker_cpus,omitempty"`
	// WorkerRestarts counts worker processes started again after they died.
	WorkerRestarts int64 `json:"worker_restarts"`

	Spouts          int     `json:"spouts"`
	Splitters       int     `json:"splitters"`
	Counters        int     `json:"counters"`
	Ackers          int     `json:"ackers"`
	MaxSpoutPending int     `json:"max_spout_pending"`
	CountDelayS     float64 `json:"count_delay_s"`
	Rate            float64 `json:"rate"`

	GOGC       int    `json:"gogc"`    // -1 = off
	HeapMB     int    `json:"heap_mb"` // the memory limit
	GCFloorMB  int    `json:"gc_floor_mb"`
	Pretouch   bool   `json:"heap_pretouch"`
	TupleReuse bool   `json:"tuple_reuse"`
	Stats      bool   `json:"stats"` // the gale runner kept its per-component metrics (topology.stats.enabled)
	GoVersion  string `json:"go_version"`
	GOMAXPROCS int    `json:"gomaxprocs"`
}

// Latencies are complete-latency quantiles in milliseconds.
type Latencies struct {
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
}

// RSSSummary summarises the RSS samples after skipping WarmupSamples leading ones: a
// last close to max and well above min means memory was still growing.
type RSSSummary struct {
	Min           int64 `json:"min"`
	Max           int64 `json:"max"`
	Last          int64 `json:"last"`
	WarmupSamples int   `json:"warmup_samples"`
}

// WorkerRSS is one worker process's resident set size over the run.
type WorkerRSS struct {
	Worker       int         `json:"worker"`
	SamplesBytes []int64     `json:"samples_bytes"`                // about once a second
	AfterWarmup  *RSSSummary `json:"after_warmup_bytes,omitempty"` // as Report.RSSAfterWarmup
}

// NewReport builds the report of a run from its options, final Stats and measurements.
func NewReport(opts Options, stats *Stats, m Measurements) *Report {
	c := stats.load()
	r := &Report{
		Mode:       opts.Mode,
		Runner:     opts.Runner,
		StartupS:   m.Startup.Seconds(),
		DurationS:  m.Window.Seconds(),
		DrainS:     m.Drain.Seconds(),
		Sentences:  c.sentences,
		Words:      c.words,
		Acked:      c.acked,
		Failed:     c.failed,
		Timeouts:   c.timeouts,
		Unfinished: c.unfinished,
		Replayed:   c.replayed,

		Workers:        opts.Workers,
		WorkerRestarts: stats.WorkerRestarts.Load(),
		WireBytes:      stats.WireBytes.Load(),
		WireTuples:     stats.WireTuples.Load(),

		CPUSeconds:      m.CPU.Seconds(),
		MaxRSSBytes:     m.MaxRSS,
		RSSSamplesBytes: append([]int64{}, m.RSSSamples...),

		Spouts:          opts.Spouts,
		Splitters:       opts.Splitters,
		Counters:        opts.Counters,
		Ackers:          opts.Ackers,
		MaxSpoutPending: opts.MaxSpoutPending,
		CountDelayS:     opts.CountDelay.Seconds(),
		Rate:            opts.Rate,

		GOGC:       opts.GOGC,
		HeapMB:     opts.HeapMB,
		GCFloorMB:  opts.GCFloorMB,
		Pretouch:   opts.HeapPretouch && opts.GCFloorMB > 0,
		TupleReuse: opts.TupleReuse && opts.Runner == RunnerGale, // plain has no tuples
		Stats:      !opts.StatsOff && opts.Runner == RunnerGale,
		GCCycles:   m.GCCycles,
		GoVersion:  runtime.Version(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
	}
	if opts.Runner == RunnerPlain {
		// RunPlain always runs one goroutine per stage and no acker.
		r.Spouts, r.Splitters, r.Counters, r.Ackers = 1, 1, 1, 0
	}
	if m.Window > 0 {
		r.SentencesPerSec = float64(m.WindowSentences) / m.Window.Seconds()
		r.WordsPerSec = float64(m.WindowWords) / m.Window.Seconds()
	}
	if c.sentences > 0 {
		r.CPUSecondsPerMillionSentences = r.CPUSeconds / (float64(c.sentences) / 1e6)
		r.AllocBytesPerSentence = float64(m.AllocBytes) / float64(c.sentences)
	}
	r.LatencyMS = &Latencies{}
	if opts.Mode == ModeAck {
		r.Lost = max(0, c.sentences-c.acked)
		r.LatencyMS = &Latencies{
			P50:  ms(stats.Latency.Quantile(0.50)),
			P99:  ms(stats.Latency.Quantile(0.99)),
			P999: ms(stats.Latency.Quantile(0.999)),
		}
		r.LatencyP99MSPerSecond = make([]float64, len(m.P99PerSecond))
		for i, d := range m.P99PerSecond {
			r.LatencyP99MSPerSecond[i] = ms(d)
		}
		if m.WarmupLatency != nil && len(m.P99PerSecond) > warmupSamples {
			var end, after histCounts
			stats.Latency.load(&end)
			after.sub(&end, m.WarmupLatency)
			r.LatencyAfterWarmupMS = &Latencies{
				P50:  ms(after.quantile(0.50)),
				P99:  ms(after.quantile(0.99)),
				P999: ms(after.quantile(0.999)),
			}
		}
	}
	if r.WireTuples > 0 {
		r.WireBytesPerTuple = float64(r.WireBytes) / float64(r.WireTuples)
	}
	r.RSSAfterWarmup = summariseRSS(m.RSSSamples)
	r.WorkerCPUs = stats.workerCPUs()
	for _, w := range stats.workerRSS() {
		if len(w.samples) == 0 {
			continue
		}
		r.WorkerRSS = append(r.WorkerRSS, WorkerRSS{
			Worker:       w.worker,
			SamplesBytes: w.samples, // already a copy
			AfterWarmup:  summariseRSS(w.samples),
		})
	}
	return r
}

// summariseRSS summarises once-a-second RSS samples after skipping warmupSamples
// leading ones (when there are more than that); nil without samples.
func summariseRSS(s []int64) *RSSSummary {
	if len(s) == 0 {
		return nil
	}
	skip := 0
	if len(s) > warmupSamples {
		skip = warmupSamples
	}
	sum := RSSSummary{Min: s[skip], Max: s[skip], Last: s[len(s)-1], WarmupSamples: skip}
	for _, v := range s[skip:] {
		sum.Min, sum.Max = min(sum.Min, v), max(sum.Max, v)
	}
	return &sum
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// WriteJSON writes r as one indented JSON document followed by a newline.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// WriteTable writes r as a human-readable table.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, args...)...) }
	rate := "unlimited"
	if r.Rate > 0 {
		rate = Commas(int64(r.Rate)) + " sentences/s"
	}
	if r.Error != "" {
		row("error", "%s", r.Error)
	}
	metrics := ""
	if r.Runner == RunnerGale && !r.Stats {
		metrics = ", metrics off (topology.stats.enabled false)"
	}
	row("runner", "%s, mode %s, rate %s%s", r.Runner, r.Mode, rate, metrics)
	pending := "unset (automatic)"
	if r.MaxSpoutPending > 0 {
		pending = Commas(int64(r.MaxSpoutPending))
	}
	row("topology", "spouts %d, splitters %d, counters %d, ackers %d, max spout pending %s, count delay %v",
		r.Spouts, r.Splitters, r.Counters, r.Ackers, pending, time.Duration(r.CountDelayS*1e9))
	row("duration", "%.2fs (after %.2fs start-up, + %.3fs drain)", r.DurationS, r.StartupS, r.DrainS)
	row("sentences", "%s\t%s/s", Commas(r.Sentences), Commas(int64(r.SentencesPerSec)))
	row("words", "%s\t%s/s", Commas(r.Words), Commas(int64(r.WordsPerSec)))
	if r.Mode == ModeAck {
		row("acked", "%s", Commas(r.Acked))
		row("failed", "%s", Commas(r.Failed))
		row("timeouts", "%s", Commas(r.Timeouts))
		row("unfinished", "%s", Commas(r.Unfinished))
		row("replayed", "%s", Commas(r.Replayed))
		row("lost", "%s", Commas(r.Lost))
		row("latency", "p50 %s  p99 %s  p99.9 %s", fmtMS(r.LatencyMS.P50), fmtMS(r.LatencyMS.P99), fmtMS(r.LatencyMS.P999))
		if l := r.LatencyAfterWarmupMS; l != nil {
			row("", "p50 %s  p99 %s  p99.9 %s (after %ds warm-up)", fmtMS(l.P50), fmtMS(l.P99), fmtMS(l.P999), warmupSamples)
		}
	}
	row("cpu", "%.2fs\t%.3fs per million sentences", r.CPUSeconds, r.CPUSecondsPerMillionSentences)
	proc := "" // with worker processes, this process is only the launcher
	if r.Workers > 1 {
		proc = "launcher "
	}
	row(proc+"heap", "%.0f bytes allocated per sentence, %d GC cycles", r.AllocBytesPerSentence, r.GCCycles)
	row(proc+"max rss", "%s", mib(r.MaxRSSBytes))
	if s := r.RSSAfterWarmup; s != nil {
		row(proc+"rss", "%s", fmtRSS(s))
	}
	if r.Workers > 1 {
		row("workers", "%d processes, wire %s in %s tuples, %.1f bytes per tuple",
			r.Workers, Commas(r.WireBytes)+" bytes", Commas(r.WireTuples), r.WireBytesPerTuple)
		if r.WorkerRestarts > 0 {
			row("", "%d worker restarts", r.WorkerRestarts)
		}
		if r.WorkerCPUs != nil {
			row("", "pinned to CPUs %v", r.WorkerCPUs)
		}
		for _, w := range r.WorkerRSS {
			if w.AfterWarmup != nil {
				row(fmt.Sprintf("worker %d rss", w.Worker), "%s", fmtRSS(w.AfterWarmup))
			}
		}
	}
	gogc := strconv.Itoa(r.GOGC)
	if r.GOGC == GOGCOff {
		gogc = "off"
	}
	pretouched := ""
	if r.Pretouch {
		pretouched = " (pretouched)"
	}
	row("go", "%s, GOMAXPROCS %d, GOGC %s, GC floor %d MiB%s, memory limit %d MiB", r.GoVersion, r.GOMAXPROCS, gogc, r.GCFloorMB, pretouched, r.HeapMB)
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// Commas formats n with thousands separators: 6498760 → "6,498,760".
func Commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	b := make([]byte, 0, len(s)+len(s)/3+1)
	if neg {
		b = append(b, '-')
	}
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	return string(b)
}

// fmtRSS formats an RSS summary for the table.
func fmtRSS(s *RSSSummary) string {
	warmup := ""
	if s.WarmupSamples > 0 {
		warmup = fmt.Sprintf(" (after %ds warm-up)", s.WarmupSamples)
	}
	return fmt.Sprintf("min %s  max %s  last %s%s", mib(s.Min), mib(s.Max), mib(s.Last), warmup)
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

func fmtMS(v float64) string {
	if v < 10 {
		return strconv.FormatFloat(v, 'f', 3, 64) + "ms"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + "ms"
}
