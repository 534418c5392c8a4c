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

// activateTimeout bounds the start-up: from the runner's start until every spout
// task is active.
const activateTimeout = 2 * time.Minute

// ErrNothingEmitted is wrapped by Run's error when the run emitted no sentence.
var ErrNothingEmitted = errors.New("bench: no sentence was emitted")

// Run validates opts, starts topo and, once every spout task is active (Stats.SpoutsActivated
// reaches [Options.SpoutTasks]; start-up is not measured), measures it for
// opts.Duration, or until ctx is done or the runner stops, whichever is first. Then it
// has the runner stop and drain, and writes the report to out: one JSON document if
// opts.JSON, a table otherwise. Unless live is nil it writes a progress line per second
// to live. Run returns after topo and everything Run started have stopped.
//
// A run that went wrong still writes its report, with what it measured and, in
// Report.Error, what went wrong; Run returns the report and that error. It is an error
// when the runner failed, when the spouts did not all become active within
// activateTimeout, and when no sentence was emitted ([ErrNothingEmitted]). The report
// is nil only when opts are invalid or the report could not be written.
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
	launched := time.Now()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	var wg sync.WaitGroup
	defer wg.Wait()
	runErr := make(chan error, 1)
	wg.Go(func() { runErr <- topo(runCtx, opts, &stats) })

	// Start-up: wait until every spout task is active.
	var m Measurements
	var runnerErr, startErr error
	runnerDone := false
	want := int64(opts.SpoutTasks())
	activated := stats.activatedSignal()
	deadline := time.NewTimer(activateTimeout)
	defer deadline.Stop()
	for !m.Activated && !runnerDone && startErr == nil {
		if stats.SpoutsActivated.Load() >= want {
			m.Activated = true
			break
		}
		select {
		case <-activated:
		case runnerErr = <-runErr:
			runnerDone = true
		case <-ctx.Done():
			startErr = errors.New("interrupted before the spouts were active")
		case <-deadline.C:
			startErr = fmt.Errorf("the spouts were not all active within %v of the start (%d of %d spout tasks)",
				activateTimeout, stats.SpoutsActivated.Load(), want)
		}
	}
	m.Startup = time.Since(launched)

	// The window, from activation.
	start := time.Now()
	if m.Activated {
		m.OpenSentences, m.OpenWords = stats.Sentences.Load(), stats.Words.Load()
		if live != nil {
			fmt.Fprintf(live, "spouts active after %.2fs of start-up; measuring for %v\n", m.Startup.Seconds(), opts.Duration)
		}
		mon := &monitor{opts: opts, stats: &stats, start: start, live: live}
		stopMon := make(chan struct{})
		monDone := make(chan struct{})
		go func() { defer close(monDone); mon.run(stopMon) }()
		window := time.NewTimer(opts.Duration)
		select {
		case <-window.C:
		case <-ctx.Done():
		case runnerErr = <-runErr: // the runner stopped on its own
			runnerDone = true
		}
		window.Stop()
		m.Window = time.Since(start)
		m.WindowSentences = stats.Sentences.Load() - m.OpenSentences
		m.WindowWords = stats.Words.Load() - m.OpenWords
		close(stopMon)
		<-monDone
		m.RSSSamples = mon.rss
		m.P99PerSecond = mon.p99s
		m.WarmupLatency = mon.warmHist
	}
	cancel()
	if !runnerDone {
		runnerErr = <-runErr
	}
	m.Drain = time.Since(start) - m.Window

	var errs []error
	if runnerErr != nil {
		errs = append(errs, fmt.Errorf("%s runner: %w", opts.Runner, runnerErr))
	}
	if startErr != nil {
		errs = append(errs, fmt.Errorf("bench: %w", startErr))
	}
	if stats.Sentences.Load() == 0 && (m.Activated || runnerErr == nil) { // a runner that failed to start says why itself
		why := "the spouts never became active"
		if m.Activated {
			why = fmt.Sprintf("the spouts were active for %v and emitted nothing: the topology may be stalled (see the log on stderr) or --duration too short for this machine", m.Window.Round(time.Millisecond))
		} else if runnerErr == nil && startErr == nil {
			why = "the runner stopped before the spouts were active"
		}
		errs = append(errs, fmt.Errorf("%w: %s", ErrNothingEmitted, why))
	}
	err = errors.Join(errs...)

	cpu1, maxRSS, uerr := runUsage()
	if uerr != nil {
		return nil, errors.Join(err, uerr)
	}
	m.CPU = cpu1 - cpu0
	goruntime.ReadMemStats(&ms1)
	m.AllocBytes = ms1.TotalAlloc - ms0.TotalAlloc
	m.GCCycles = ms1.NumGC - ms0.NumGC
	m.MaxRSS = maxRSS

	r := NewReport(opts, &stats, m)
	if err != nil {
		r.Error = err.Error()
	}
	var werr error
	if opts.JSON {
		werr = r.WriteJSON(out)
	} else {
		werr = r.WriteTable(out)
	}
	if werr != nil {
		return nil, errors.Join(err, werr)
	}
	return r, err
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
	perSec := func(cur, prev int64) string { return Commas(int64(float64(cur-prev) / dt)) }
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
				Commas(c.acked), Commas(c.failed), Commas(c.timeouts), fmtMS(ms(p99)))
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
