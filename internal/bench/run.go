package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	goruntime "runtime"
	"sync"
	"time"

	"github.com/gale-stream/gale/internal/workermem"
)

// Runner runs the word-count workload described by opts until ctx is done, updating
// stats as it goes; then it stops the spouts, drains what is in flight and returns
// after every goroutine it started has ended. See the package documentation.
type Runner func(ctx context.Context, opts Options, stats *Stats) error

// sampleEvery is the period of the live view and of the RSS samples.
const sampleEvery = time.Second

// Run validates opts, runs topo for opts.Duration (or until ctx is done, whichever is
// first), and writes the report to out: one JSON document if opts.JSON, a table
// otherwise. Unless live is nil it writes a progress line per second to live. Run
// returns after topo and everything Run started have stopped.
func Run(ctx context.Context, opts Options, topo Runner, out, live io.Writer) (*Report, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if topo == nil {
		return nil, errors.New("bench: nil runner")
	}
	// Both runners run as a Gale worker would (workermem.Settings.Apply).
	defer workermem.Settings{
		GCPercent:  opts.GOGC,
		LimitBytes: int64(opts.HeapMB) << 20,
		FloorBytes: int64(opts.GCFloorMB) << 20,
		// With worker processes this one only launches them; each
		// pretouches its own heap.
		Pretouch: opts.HeapPretouch && opts.Workers == 1,
	}.Apply()()
	var ms0, ms1 goruntime.MemStats
	goruntime.ReadMemStats(&ms0)
	cpu0, _, err := runUsage()
	if err != nil {
		return nil, err
	}

	var stats Stats
	start := time.Now()
	runCtx, cancel := context.WithTimeout(ctx, opts.Duration)
	defer cancel()

	var wg sync.WaitGroup
	runErr := make(chan error, 1)
	wg.Go(func() { runErr <- topo(runCtx, opts, &stats) })
	mon := &monitor{opts: opts, stats: &stats, start: start, live: live}
	stopMon := make(chan struct{})
	wg.Go(func() { mon.run(stopMon) })

	var m Measurements
	closeWindow := func() {
		m.Window = time.Since(start)
		m.WindowSentences = stats.Sentences.Load()
		m.WindowWords = stats.Words.Load()
	}
	select {
	case <-runCtx.Done():
		closeWindow()
		err = <-runErr
	case err = <-runErr: // the runner stopped on its own
		closeWindow()
	}
	m.Drain = time.Since(start) - m.Window
	cancel()
	close(stopMon)
	wg.Wait()

	if err != nil {
		return nil, fmt.Errorf("%s runner: %w", opts.Runner, err)
	}
	cpu1, maxRSS, err := runUsage()
	if err != nil {
		return nil, err
	}
	m.CPU = cpu1 - cpu0
	goruntime.ReadMemStats(&ms1)
	m.AllocBytes = ms1.TotalAlloc - ms0.TotalAlloc
	m.GCCycles = ms1.NumGC - ms0.NumGC
	m.MaxRSS = maxRSS
	m.RSSSamples = mon.rss
	m.P99PerSecond = mon.p99s
	m.WarmupLatency = mon.warmHist

	r := NewReport(opts, &stats, m)
	if opts.JSON {
		err = r.WriteJSON(out)
	} else {
		err = r.WriteTable(out)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// runUsage returns the CPU time used so far by this process and by its child processes
// that have been waited for — a multi-process runner's workers count once the runner
// has waited for them; an in-process run adds nothing from children — and this
// process's peak resident set size in bytes.
func runUsage() (cpu time.Duration, maxRSS int64, err error) {
	self, maxRSS, err := rusage()
	if err != nil {
		return 0, 0, err
	}
	children, err := childrenCPU()
	if err != nil {
		return 0, 0, err
	}
	return self + children, maxRSS, nil
}

// monitor samples the stats and RSS once a second and prints the live view. Its fields
// after opts are owned by its run goroutine until run returns.
type monitor struct {
	opts  Options
	stats *Stats
	start time.Time
	live  io.Writer // nil: no live view; set to nil after a failed write

	rss       []int64         // one sample per second
	p99s      []time.Duration // ack mode: p99 of the trees completed in each second
	warmHist  *histCounts     // ack mode: the latency histogram when the warm-up ended
	prev      counters
	prevAt    time.Time
	prevHist  histCounts
	curHist   histCounts
	deltaHist histCounts
	rssFailed bool
}

func (m *monitor) run(stop <-chan struct{}) {
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	m.prevAt = m.start
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			m.sample(now)
		}
	}
}

func (m *monitor) sample(now time.Time) {
	rss, err := currentRSS()
	if err == nil {
		m.rss = append(m.rss, rss)
	}
	c := m.stats.load()
	dt := now.Sub(m.prevAt).Seconds()
	perSec := func(cur, prev int64) string { return commas(int64(float64(cur-prev) / dt)) }
	ack := m.opts.Mode == ModeAck
	var p99 time.Duration
	if ack {
		m.stats.Latency.load(&m.curHist)
		m.deltaHist.sub(&m.curHist, &m.prevHist)
		p99 = m.deltaHist.quantile(0.99)
		m.prevHist = m.curHist
		m.p99s = append(m.p99s, p99)
		if len(m.p99s) == warmupSamples {
			w := m.curHist
			m.warmHist = &w
		}
	}
	if m.live != nil {
		line := fmt.Sprintf("%4ds  sentences/s %s  words/s %s",
			int(now.Sub(m.start).Round(time.Second)/time.Second),
			perSec(c.sentences, m.prev.sentences), perSec(c.words, m.prev.words))
		if ack {
			line += fmt.Sprintf("  acked %s  failed %s  timeouts %s  p99 %s",
				commas(c.acked), commas(c.failed), commas(c.timeouts), fmtMS(ms(p99)))
		}
		if err == nil {
			line += "  rss " + mib(rss)
		}
		if _, err := io.WriteString(m.live, line+"\n"); err != nil {
			m.live = nil // the live view is best effort; the report still gets written
		}
	}
	m.prev, m.prevAt = c, now
}
