package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/bridge"
	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/metrics"
	"github.com/gale-stream/gale/internal/workerproc"
)

// runFlags are the flags of `run`.
type runFlags struct {
	file     string
	workers  int
	duration time.Duration
	params   []string
	asJSON   bool
}

// newRunCmd is `run NAME`, Storm's `storm local`: one of the program's
// topologies, in this process or in worker processes of this binary, until
// a signal or --duration.
func newRunCmd(opts *Options) *cobra.Command {
	f := runFlags{workers: 1}
	cmd := &cobra.Command{
		Use:   "run NAME",
		Short: "Run one of this program's topologies until Ctrl-C, in this process or in worker processes",
		Long: `Run the topology NAME, one of this program's, until Ctrl-C (SIGINT or
SIGTERM) or for --duration, as Storm's "storm local" does. Each second the
live numbers of every spout go to stderr: tuples emitted, trees acked,
failed and pending. On the first Ctrl-C the spouts stop, the trees in
flight drain (up to topology.shutdown.drain.timeout.secs), and a report
goes to stdout (with --json, one JSON document, and no live numbers on
stderr); a second Ctrl-C kills the program at once.

--workers N runs the topology in N worker processes of this program on
127.0.0.1, so that tuples cross between them over TCP. Each --param
KEY=VALUE goes to the topology's Build function, in this process and in
every worker. --file layers a gale.yaml beneath the topology's config, as
in "config show --file".

` + topologyList(opts),
		Args: cobra.ArbitraryArgs, // checked in RunE, to name the topologies there are
		RunE: func(cmd *cobra.Command, args []string) error {
			t, params, err := f.parse(cmd, opts, args)
			if err != nil {
				return usageError{err}
			}
			return runTopology(cmd, t, params, f)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.workers, "workers", f.workers, "worker processes to run the topology in, on 127.0.0.1 (1 = in this process)")
	fl.DurationVar(&f.duration, "duration", 0, "stop this long after the spouts start, as the first Ctrl-C does (0 = run until Ctrl-C)")
	fl.StringArrayVarP(&f.params, "param", "p", nil, "a parameter for the topology's Build function, `KEY=VALUE` (repeatable)")
	fl.StringVar(&f.file, "file", "", "a gale.yaml to layer beneath the topology's config")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON document on stdout, and no live numbers")
	return cmd
}

// topologyList is the help's list of the program's topologies.
func topologyList(opts *Options) string {
	if len(opts.Topologies) == 0 {
		return opts.Name + " has no topologies.\n"
	}
	var b strings.Builder
	b.WriteString("Topologies:\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, name := range opts.names() {
		t, _ := opts.Lookup(name)
		fmt.Fprintf(tw, "  %s\t%s\n", t.Name, t.Short)
	}
	tw.Flush()
	return b.String()
}

// parse checks the command line of `run`, reporting every mistake at once.
func (f runFlags) parse(cmd *cobra.Command, opts *Options, args []string) (Topology, map[string]string, error) {
	var errs []error
	var t Topology
	switch len(args) {
	case 0:
		errs = append(errs, fmt.Errorf("%q needs the name of a topology: %s", cmd.CommandPath(), opts.Known()))
	case 1:
		var ok bool
		if t, ok = opts.Lookup(args[0]); !ok {
			errs = append(errs, fmt.Errorf("unknown topology %q: %s", args[0], opts.Known()))
		}
	default:
		errs = append(errs, fmt.Errorf("%q takes one topology name, got %q", cmd.CommandPath(), args))
	}
	if f.workers < 1 || f.workers > maxRunWorkers {
		errs = append(errs, fmt.Errorf("--workers must be between 1 and %d, got %d: run runs its workers on this machine", maxRunWorkers, f.workers))
	}
	if f.duration < 0 {
		errs = append(errs, fmt.Errorf("--duration must be ≥ 0 (0 runs until Ctrl-C), got %s", f.duration))
	}
	params := make(map[string]string)
	for _, p := range f.params {
		k, v, ok := strings.Cut(p, "=")
		switch {
		case !ok || k == "":
			errs = append(errs, fmt.Errorf("--param wants KEY=VALUE, got %q", p))
		case hasKey(params, k):
			errs = append(errs, fmt.Errorf("--param %s is given twice", k))
		default:
			params[k] = v
		}
	}
	return t, params, errors.Join(errs...)
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// running is a topology `run` started: in this process or in workers.
type running interface {
	// active is closed once the spouts are active everywhere.
	active() <-chan struct{}
	// stats are the spout counters so far, by component.
	stats() []metrics.Spout
	// errors counts the errors components reported or caused.
	errors() int64
	// failed yields an error if the topology fails by itself.
	failed() <-chan error
	// stop stops the topology in order (spouts deactivated, trees in
	// flight drained) and waits for it; it returns what went wrong while
	// it ran or stopped, if stop can tell.
	stop() error
}

// runReport is what `run` prints at the end; --json prints it as is.
type runReport struct {
	Topology  string  `json:"topology"`
	Workers   int     `json:"workers"`
	DurationS float64 `json:"duration_s"`
	// StoppedBy is "duration", "signal" or "failure".
	StoppedBy string `json:"stopped_by"`
	// The spouts' totals, then each spout's.
	Emitted int64           `json:"emitted"`
	Acked   int64           `json:"acked"`
	Failed  int64           `json:"failed"`
	Pending int64           `json:"pending"`
	Errors  int64           `json:"errors"`
	Spouts  []metrics.Spout `json:"spouts"`
	Error   string          `json:"error,omitempty"`
}

func runTopology(cmd *cobra.Command, t Topology, params map[string]string, f runFlags) error {
	// The workers build it too; building it here first reports a bad
	// parameter once, before any process starts.
	topo, conf, err := t.Build(params)
	if err != nil {
		return fmt.Errorf("topology %q: %w", t.Name, err)
	}
	var file gale.Config
	if f.file != "" {
		if file, err = config.LoadFile(f.file); err != nil {
			return err
		}
	}
	// Every key is checked here, before any process starts.
	eff, err := config.Resolve(file, conf)
	if err != nil {
		return fmt.Errorf("topology %q: %w", t.Name, err)
	}
	stderr := cmd.ErrOrStderr()
	var live io.Writer
	if !f.asJSON {
		live = stderr
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// topology.debug's lines, one per emit, are INFO: they show, as
	// Storm's do, while the rest of the run logs from WARN.
	debugLog := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var r running
	where := "in this process"
	if f.workers == 1 {
		r, err = startLocal(t.Name, conf, file, topo, log, debugLog)
	} else {
		where = fmt.Sprintf("in %d worker processes", f.workers)
		r, err = startWorkers(t.Name, eff, file, params, f.workers, stderr)
	}
	if err != nil {
		return err
	}
	start := time.Now()
	// Status lines go to stderr with --json too: stdout has only the report.
	fmt.Fprintf(stderr, "running %s %s; Ctrl-C stops it\n", t.Name, where)
	// --duration counts from when the spouts are active everywhere: worker
	// processes activate theirs once connected to every peer.
	var deadline <-chan time.Time
	active := r.active()
	tk := time.NewTicker(time.Second)
	defer tk.Stop()
	var stoppedBy string
	var runErr error
loop:
	for {
		select {
		case <-active:
			active = nil
			start = time.Now()
			if f.duration > 0 {
				tm := time.NewTimer(f.duration)
				defer tm.Stop()
				deadline = tm.C
			}
		case <-tk.C:
			if live != nil {
				writeLive(live, time.Since(start), r.stats())
			}
		case <-deadline:
			stoppedBy = "duration"
			break loop
		case <-cmd.Context().Done():
			stoppedBy = "signal"
			break loop
		case runErr = <-r.failed():
			stoppedBy = "failure"
			break loop
		}
	}
	elapsed := time.Since(start)
	// A tick due before the stop still shows.
	select {
	case <-tk.C:
		if live != nil {
			writeLive(live, time.Since(start), r.stats())
		}
	default:
	}
	if stoppedBy == "signal" {
		fmt.Fprintln(stderr, "stopping: draining the trees in flight (Ctrl-C again kills the program)")
	}
	if err := r.stop(); err != nil {
		runErr = err
	}
	spouts := r.stats()
	if spouts == nil {
		spouts = []metrics.Spout{}
	}
	tot := metrics.TotalSpouts(spouts)
	rep := runReport{
		Topology: t.Name, Workers: f.workers, DurationS: elapsed.Seconds(), StoppedBy: stoppedBy,
		Emitted: tot.Emitted, Acked: tot.Acked, Failed: tot.Failed, Pending: tot.Pending,
		Errors: r.errors(), Spouts: spouts,
	}
	if runErr != nil {
		rep.Error = runErr.Error()
	}
	if err := writeReport(cmd.OutOrStdout(), rep, f.asJSON); err != nil {
		return errors.Join(runErr, err)
	}
	return runErr
}

// writeLive prints one line per spout.
func writeLive(w io.Writer, elapsed time.Duration, spouts []metrics.Spout) {
	for _, s := range spouts {
		fmt.Fprintf(w, "%5.0fs  %s  emitted %d  acked %d  failed %d  pending %d\n",
			elapsed.Seconds(), s.Component, s.Emitted, s.Acked, s.Failed, s.Pending)
	}
}

// limitString is a spout's max pending for the table: "-" for none.
func limitString(n int64) string {
	if n <= 0 {
		return "-"
	}
	return itoa(n)
}

func writeReport(w io.Writer, r runReport, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "topology\t%s\n", r.Topology)
	fmt.Fprintf(tw, "workers\t%d\n", r.Workers)
	fmt.Fprintf(tw, "duration\t%.1fs\n", r.DurationS)
	fmt.Fprintf(tw, "stopped by\t%s\n", r.StoppedBy)
	fmt.Fprintf(tw, "errors\t%d\n", r.Errors)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	// max pending: the spouts' limit on trees in flight (set, or the
	// auto-tuner's last value), shown when one has a limit.
	limited := slices.ContainsFunc(r.Spouts, func(s metrics.Spout) bool { return s.MaxPending > 0 })
	rows := [][]string{{"spout", "tasks", "emitted", "acked", "failed", "pending"}}
	if limited {
		rows[0] = append(rows[0], "max pending")
	}
	for _, s := range r.Spouts {
		row := []string{s.Component, strconv.Itoa(s.Tasks), itoa(s.Emitted), itoa(s.Acked), itoa(s.Failed), itoa(s.Pending)}
		if limited {
			row = append(row, limitString(s.MaxPending))
		}
		rows = append(rows, row)
	}
	if len(r.Spouts) > 1 {
		row := []string{"total", "", itoa(r.Emitted), itoa(r.Acked), itoa(r.Failed), itoa(r.Pending)}
		if limited {
			row = append(row, "")
		}
		rows = append(rows, row)
	}
	// The names left-aligned, the numbers right-aligned.
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, c := range row {
			widths[i] = max(widths[i], len(c))
		}
	}
	for _, row := range rows {
		line := fmt.Sprintf("%-*s", widths[0], row[0])
		for i := 1; i < len(row); i++ {
			line += fmt.Sprintf("  %*s", widths[i], row[i])
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// local is a topology running in this process.
type local struct {
	lt *gale.LocalTopology
}

// startLocal starts the topology in this process, logging to log and
// topology.debug's lines to debugLog.
func startLocal(name string, conf, file gale.Config, topo *gale.Topology, log, debugLog *slog.Logger) (*local, error) {
	opts := gale.RunOptions{Logger: log}
	bridge.SetFileConfig(&opts, file)
	bridge.SetHooks(&opts, bridge.Hooks{DebugLogger: debugLog})
	lt, err := gale.StartLocal(name, conf, topo, opts)
	if err != nil {
		return nil, err
	}
	return &local{lt: lt}, nil
}

// active: StartLocal returns with the spouts active.
func (l *local) active() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

func (l *local) stats() []metrics.Spout { return bridge.SpoutStats(l.lt) }
func (l *local) errors() int64 {
	_, n := l.lt.Errors()
	return n
}
func (l *local) failed() <-chan error { return l.lt.Failed() }
func (l *local) stop() error {
	l.lt.Stop()
	return nil
}

// workers is a topology running in worker processes of this binary.
type workers struct {
	c     *workerproc.Cluster
	dir   string
	drain time.Duration
	fail  chan error
	ready chan struct{} // closed by take once every worker reported active spouts

	mu      sync.Mutex
	spouts  [][]metrics.Spout // each worker's last report
	errs    []int64
	started []bool // the worker reported active spouts
	waiting int    // workers not yet started
}

// maxRunWorkers bounds run --workers: every worker is a process on this
// machine with its own heap budget (worker.heap.memory.mb, 768 MiB by
// default) and pretouched GC floor, so a mistyped count would fork the
// machine out of memory.
const maxRunWorkers = 16

// workerHeartbeat is how often run's workers report.
const workerHeartbeat = 250 * time.Millisecond

// startWorkers launches n workers of this binary; eff is the topology's
// effective config, file the gale.yaml layer beneath it.
func startWorkers(name string, eff *config.Effective, file gale.Config, params map[string]string, n int, logs io.Writer) (_ *workers, err error) {
	secs, _ := eff.Int(gale.TopologyShutdownDrainTimeoutSecs)
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	pj, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "gale-run-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	w := &workers{dir: dir, drain: time.Duration(secs) * time.Second, fail: make(chan error, 1),
		ready: make(chan struct{}), spouts: make([][]metrics.Spout, n), errs: make([]int64, n),
		started: make([]bool, n), waiting: n}
	w.c, err = workerproc.Launch(workerproc.LaunchConfig{
		Exe:  exe,
		Args: WorkerArgs,
		Spec: workerproc.Spec{
			Topology:    name,
			Factory:     workerFactory(name),
			Params:      pj,
			HeartbeatMS: int(workerHeartbeat / time.Millisecond),
			LogLevel:    "warn",
			Cluster:     file,
		},
		N:         n,
		Dir:       dir,
		Stderr:    logs,
		OnMessage: w.take,
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// take keeps a worker's last counters; it runs on that worker's reading
// goroutine.
func (w *workers) take(worker, _ int, m workerproc.Message) {
	switch m.Event {
	case workerproc.EventHeartbeat, workerproc.EventStopped:
		w.mu.Lock()
		w.spouts[worker] = m.Spouts
		if m.Status != nil {
			w.errs[worker] = m.Status.Errors
			// Stopped is false once the worker's spouts are active.
			if m.Event == workerproc.EventHeartbeat && !m.Status.Stopped && !w.started[worker] {
				w.started[worker] = true
				if w.waiting--; w.waiting == 0 {
					close(w.ready)
				}
			}
		}
		w.mu.Unlock()
	case workerproc.EventFailed:
		select {
		case w.fail <- fmt.Errorf("worker %d failed: %s", worker, m.Error):
		default:
		}
	}
}

func (w *workers) stats() []metrics.Spout {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []metrics.Spout
	for _, s := range w.spouts {
		out = metrics.AddSpouts(out, s)
	}
	return out
}

func (w *workers) errors() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var n int64
	for _, e := range w.errs {
		n += e
	}
	return n
}

func (w *workers) failed() <-chan error    { return w.fail }
func (w *workers) active() <-chan struct{} { return w.ready }

// stop drains every worker (the spouts stopped everywhere, the trees in
// flight completed) and stops them; their last heartbeats carry the final
// counters.
func (w *workers) stop() error {
	defer os.RemoveAll(w.dir)
	// Beyond the drain, the workers get a little time to exit.
	return w.c.Stop(w.drain + 5*time.Second)
}

// WorkerArgs select the worker subcommand of this binary, in the worker
// processes that `run --workers` and the stock binary's benches start;
// tests replace them when the binary is a test binary.
var WorkerArgs = []string{"worker"}
