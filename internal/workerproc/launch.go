package workerproc

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/worker"
)

// LaunchConfig describes the worker processes of one topology on this
// machine.
type LaunchConfig struct {
	// Exe is the binary to run (default: this one), with Args before the
	// "--spec FILE" the launcher adds (for gale: "worker"), and Env added
	// to this process's environment; WorkerEnv, if set, adds worker i's
	// own variables after Env (to every start of it).
	Exe       string
	Args      []string
	Env       []string
	WorkerEnv func(worker int) []string
	// Spec is every worker's spec; Worker, Workers and Listen are set per
	// worker. N is the number of workers, Host the address they listen on
	// (default 127.0.0.1) with ports they pick.
	//
	// On Unix a worker reads its spec from a pipe it inherits as
	// descriptor 3 ("--spec /dev/fd/3"): no spec file exists that a
	// launcher killed with SIGKILL could leave behind. Elsewhere the spec
	// is a file in Dir (default: the temporary directory), removed once
	// the worker has read it (it reports that it listens).
	Spec Spec
	N    int
	Host string
	Dir  string
	// Stderr receives the workers' logs (default os.Stderr).
	Stderr io.Writer
	// OnMessage, if set, gets every event line of every worker, from that
	// worker's reading goroutine; incarnation counts the worker's starts
	// from 0.
	OnMessage func(worker, incarnation int, m Message)
	// Executors is the executor → worker map every worker is started with
	// (gale.Assignment.Executors); nil means the even scheduler's.
	Executors []int
	// Restart starts a worker that exits by itself (not by Stop) again on
	// the same address, as a supervisor does.
	Restart bool
	// StartTimeout bounds each start handshake (default 30 s).
	StartTimeout time.Duration
}

// CPUPinningKey is the cluster key (gale.yaml) that has Launch bind each
// worker process, and every restart of it, to its own share of the CPUs
// this process may run on: worker i gets the i-th of N disjoint slices of
// about equal size, and GOMAXPROCS its size. Unpinned, the kernel puts
// two workers that wake each other over loopback on one CPU when their
// load rises from idle, and leaves them there for tens of milliseconds,
// each at half speed (docs/performance.md, "Pinning the workers").
// Ignored with one worker, with fewer CPUs than workers, and off Linux:
// Cluster.CPUs tells what was done.
const CPUPinningKey = config.WorkerCPUPinning

// pinCPUs reads CPUPinningKey from the cluster layer a launch hands its
// workers, checked as the workers check it.
func pinCPUs(cluster gale.Config) (bool, error) {
	eff, err := config.Resolve(cluster, nil)
	if err != nil {
		return false, fmt.Errorf("workerproc: %w", err)
	}
	return eff.Bool(CPUPinningKey), nil
}

// Cluster is a running set of worker processes.
type Cluster struct {
	cfg   LaunchConfig
	addrs []string
	cpus  [][]int // each worker's CPUs; nil: not pinned

	mu       sync.Mutex
	procs    []*proc // each worker's current process
	stopping bool
	inactive bool    // deactivated (by Drain): a restarted worker is deactivated too
	errs     []error // workers that failed or exited badly, not by Kill
	restarts int
	status   []beat // each worker's last heartbeat, from its current process
	gone     []bool // the worker died and is not being started again
	changed  chan struct{}

	wg sync.WaitGroup
}

type proc struct {
	worker, incarnation int
	cmd                 *exec.Cmd
	stdinMu             sync.Mutex
	stdin               io.WriteCloser
	events              chan Message // listening, started, failed: for the handshake
	readDone            chan struct{}
	started             bool // it was sent "start" and said "started": it takes commands
	killed              bool // by Kill: its exit is expected
	failed              string
}

// Launch starts cfg.N workers, tells each the others' addresses and
// returns once all have started. On error every process started is
// killed.
func Launch(cfg LaunchConfig) (*Cluster, error) {
	if cfg.N < 1 {
		return nil, fmt.Errorf("workerproc: %d workers", cfg.N)
	}
	if cfg.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		cfg.Exe = exe
	}
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 30 * time.Second
	}
	c := &Cluster{cfg: cfg, addrs: make([]string, cfg.N), procs: make([]*proc, cfg.N),
		status: make([]beat, cfg.N), gone: make([]bool, cfg.N), changed: make(chan struct{}, 1)}
	pin, err := pinCPUs(cfg.Spec.Cluster)
	if err != nil {
		return nil, err
	}
	if pin && cfg.N > 1 {
		if cpus, err := allowedCPUs(); err == nil && len(cpus) >= cfg.N {
			c.cpus = shareCPUs(cpus, cfg.N)
		}
	}
	// The workers are spawned one after another: each pretouches its heap
	// before it listens (about 0.3 s of CPU on a VM where page faults are
	// dear), and workers that pretouched side by side started slower:
	// two workers at 360k sentences/s had a first second's p99 of
	// 8–19 ms against 3–5 ms spawned in turn, for 0.25 s less start-up
	// (docs/performance.md, "The first second"). The start handshakes
	// then run side by side.
	for i := range cfg.N {
		p, addr, err := c.spawn(i, 0, net.JoinHostPort(cfg.Host, "0"))
		if err != nil {
			c.abort()
			return nil, err
		}
		c.mu.Lock()
		c.addrs[i], c.procs[i] = addr, p
		c.mu.Unlock()
	}
	if err := c.eachWorker(func(i int) error { return c.startAndWait(c.procs[i]) }); err != nil {
		c.abort()
		return nil, err
	}
	for _, p := range c.procs {
		c.supervise(p)
	}
	return c, nil
}

// eachWorker runs f for every worker at once and returns when all have
// returned, with their errors.
func (c *Cluster) eachWorker(f func(i int) error) error {
	errs := make([]error, c.cfg.N)
	var wg sync.WaitGroup
	for i := range c.cfg.N {
		wg.Go(func() { errs[i] = f(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Addrs are the workers' addresses.
func (c *Cluster) Addrs() []string { return c.addrs }

// CPUs are the CPUs each worker is bound to, by worker; nil if the
// workers are not pinned (CPUPinningKey).
func (c *Cluster) CPUs() [][]int { return c.cpus }

// shareCPUs splits cpus into n contiguous slices whose sizes differ by at
// most one.
func shareCPUs(cpus []int, n int) [][]int {
	out := make([][]int, n)
	for i := range n {
		out[i] = cpus[i*len(cpus)/n : (i+1)*len(cpus)/n]
	}
	return out
}

// spawn starts worker i's process and waits for its listening event.
func (c *Cluster) spawn(i, incarnation int, listen string) (*proc, string, error) {
	spec := c.cfg.Spec
	spec.Worker, spec.Workers, spec.Listen = i, c.cfg.N, listen
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command(c.cfg.Exe)
	cmd.Env = append(os.Environ(), c.cfg.Env...)
	if c.cfg.WorkerEnv != nil {
		cmd.Env = append(cmd.Env, c.cfg.WorkerEnv(i)...)
	}
	if !hasEnv(cmd.Env, "GOMAXPROCS") {
		// Like a supervisor's slots, the workers share the machine's
		// cores: each Go runtime sized for all of them makes their
		// threads compete, and the tail latency suffered (p99 24 ms
		// against 7 ms at half the 2-worker maximum on 2 cores).
		procs := max(1, runtime.NumCPU()/c.cfg.N)
		if c.cpus != nil {
			procs = len(c.cpus[i])
		}
		cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(procs))
	}
	cmd.Stderr = c.cfg.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, "", err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		stdin.Close()
		return nil, "", err
	}
	sp, err := passSpec(cmd, c.cfg.Dir, b)
	if err != nil {
		stdin.Close()
		stdout.Close()
		return nil, "", fmt.Errorf("worker %d's spec: %w", i, err)
	}
	cmd.Args = append(append(append(cmd.Args, c.cfg.Args...), "--spec"), sp.arg)
	start := cmd.Start
	if c.cpus != nil {
		start = func() error { return startPinned(cmd, c.cpus[i]) }
	}
	if err := start(); err != nil {
		sp.abort()
		stdin.Close()
		stdout.Close()
		return nil, "", fmt.Errorf("start worker %d: %w", i, err)
	}
	sp.started()
	p := &proc{worker: i, incarnation: incarnation, cmd: cmd, stdin: stdin,
		events: make(chan Message, 4), readDone: make(chan struct{})}
	go c.read(p, stdout)
	m, err := c.await(p, EventListening)
	if err != nil {
		c.reap(p)
		sp.done()
		return nil, "", err
	}
	sp.done() // the worker has read its spec
	return p, m.Addr, nil
}

// read passes p's event lines on until its stdout ends.
func (c *Cluster) read(p *proc, stdout io.Reader) {
	defer close(p.readDone)
	defer close(p.events)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var m Message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m.Event == "" {
			continue // not ours; the worker's logs go to stderr
		}
		switch m.Event {
		case EventListening, EventStarted, EventFailed:
			select {
			case p.events <- m:
			default:
			}
		}
		c.mu.Lock()
		if m.Event == EventFailed {
			p.failed = m.Error
		}
		if m.Status != nil {
			c.status[p.worker] = beat{at: time.Now(), status: *m.Status}
		}
		c.mu.Unlock()
		if m.Status != nil {
			select {
			case c.changed <- struct{}{}:
			default:
			}
		}
		if c.cfg.OnMessage != nil {
			c.cfg.OnMessage(p.worker, p.incarnation, m)
		}
	}
	io.Copy(io.Discard, stdout)
}

// await waits for p's next handshake event, which must be want.
func (c *Cluster) await(p *proc, want string) (Message, error) {
	t := time.NewTimer(c.cfg.StartTimeout)
	defer t.Stop()
	select {
	case m, ok := <-p.events:
		switch {
		case !ok:
			return m, fmt.Errorf("worker %d exited before %q (its log is on stderr)", p.worker, want)
		case m.Event == EventFailed:
			return m, fmt.Errorf("worker %d failed: %s", p.worker, m.Error)
		case m.Event != want:
			return m, fmt.Errorf("worker %d said %q, want %q", p.worker, m.Event, want)
		}
		return m, nil
	case <-t.C:
		return Message{}, fmt.Errorf("worker %d: no %q within %s", p.worker, want, c.cfg.StartTimeout)
	}
}

// startAndWait sends p "start" and waits until it has started; then p takes
// commands, and is deactivated at once if the cluster is.
func (c *Cluster) startAndWait(p *proc) error {
	if err := p.send(Message{Cmd: CmdStart, Workers: c.addrs, Executors: c.cfg.Executors}); err != nil {
		return fmt.Errorf("worker %d: %w", p.worker, err)
	}
	if _, err := c.await(p, EventStarted); err != nil {
		return err
	}
	c.mu.Lock()
	p.started = true
	inactive := c.inactive
	c.mu.Unlock()
	if inactive {
		p.send(Message{Cmd: CmdDeactivate}) // if it died meanwhile, supervise sees to it
	}
	return nil
}

func (p *proc) send(m Message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	_, err = p.stdin.Write(append(b, '\n'))
	return err
}

// reap kills p if it still runs and waits for it and its reader.
func (c *Cluster) reap(p *proc) {
	p.cmd.Process.Kill()
	p.stdin.Close()
	<-p.readDone
	p.cmd.Wait()
}

// abort kills every process started so far.
func (c *Cluster) abort() {
	c.mu.Lock()
	c.stopping = true
	procs := append([]*proc(nil), c.procs...)
	c.mu.Unlock()
	for _, p := range procs {
		if p != nil {
			c.reap(p)
		}
	}
	c.wg.Wait()
}

// supervise waits for p to exit and, with Restart, starts the worker
// again on its address unless the cluster is stopping.
func (c *Cluster) supervise(p *proc) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for {
			<-p.readDone
			err := p.cmd.Wait()
			c.mu.Lock()
			expected := c.stopping || p.killed
			switch {
			case p.failed != "" && c.stopping && !p.started:
				// Stopped while being started again: it had nothing to do.
			case p.failed != "":
				c.errs = append(c.errs, fmt.Errorf("worker %d failed: %s", p.worker, p.failed))
			case err != nil && !expected:
				c.errs = append(c.errs, fmt.Errorf("worker %d exited: %v", p.worker, err))
			}
			restart := c.cfg.Restart && !c.stopping
			if !restart {
				c.gone[p.worker] = true
			}
			c.mu.Unlock()
			c.notify()
			if !restart {
				return
			}
			np, err := c.restart(p)
			if err != nil {
				c.mu.Lock()
				c.errs = append(c.errs, fmt.Errorf("restart worker %d: %w", p.worker, err))
				c.gone[p.worker] = true
				c.mu.Unlock()
				c.notify()
				return
			}
			if np == nil {
				return // stopping
			}
			p = np
		}
	}()
}

func (c *Cluster) restart(old *proc) (*proc, error) {
	// The old port may still be held for a moment by the dying process's
	// sockets: retry the bind a few times.
	var lastErr error
	for attempt := range 50 {
		c.mu.Lock()
		stopping := c.stopping
		c.mu.Unlock()
		if stopping {
			return nil, nil
		}
		if attempt > 0 {
			time.Sleep(100 * time.Millisecond) // a retry interval, not a wait for a condition
		}
		p, _, err := c.spawn(old.worker, old.incarnation+1, c.addrs[old.worker])
		if err != nil {
			lastErr = err
			continue
		}
		c.mu.Lock()
		if c.stopping {
			c.mu.Unlock()
			c.reap(p)
			return nil, nil
		}
		c.procs[old.worker] = p
		c.status[old.worker] = beat{} // the old process's no longer holds
		c.restarts++
		c.mu.Unlock()
		if err := c.startAndWait(p); err != nil {
			c.reap(p)
			return nil, err
		}
		return p, nil
	}
	return nil, lastErr
}

func hasEnv(env []string, name string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, name+"=") {
			return true
		}
	}
	return false
}

// Restarts is how many times workers were restarted.
func (c *Cluster) Restarts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.restarts
}

// notify wakes Drain to look at the workers again.
func (c *Cluster) notify() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// PID is the process id of worker i's current process.
func (c *Cluster) PID(i int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.procs[i].cmd.Process.Pid
}

// Kill sends SIGKILL to worker i's current process (with Restart, it is
// started again). Its exit is not counted as an error.
func (c *Cluster) Kill(i int) error {
	c.mu.Lock()
	p := c.procs[i]
	p.killed = true
	c.mu.Unlock()
	return p.cmd.Process.Signal(syscall.SIGKILL)
}

// Broadcast sends a command ("activate", "deactivate") to every worker
// process that has started; one that is being started again gets the
// cluster's activation once it has (Drain's deactivation). It returns the
// errors of the sends that failed, as to a worker that just died.
func (c *Cluster) Broadcast(cmd string) error {
	c.mu.Lock()
	switch cmd {
	case CmdActivate:
		c.inactive = false
	case CmdDeactivate:
		c.inactive = true
	}
	var procs []*proc
	for _, p := range c.procs {
		if p.started {
			procs = append(procs, p)
		}
	}
	c.mu.Unlock()
	var errs []error
	for _, p := range procs {
		if err := p.send(Message{Cmd: cmd}); err != nil {
			errs = append(errs, fmt.Errorf("worker %d: %w", p.worker, err))
		}
	}
	return errors.Join(errs...)
}

// beat is a worker's last reported status and when it arrived.
type beat struct {
	at     time.Time
	status worker.Status
}

// Drain deactivates every worker and waits, up to timeout, until each has
// reported in a heartbeat that its spouts stopped and it has no trees
// pending and nothing queued. It carries on past a worker that dies: one
// being started again (LaunchConfig.Restart) is deactivated once it has
// started, and waited for like the others; one that is not is left out.
// The trees such a worker held time out at their spouts, which may replay
// them meanwhile.
func (c *Cluster) Drain(timeout time.Duration) error {
	since := time.Now()
	c.Broadcast(CmdDeactivate) // a failed send is to a dead worker: see above
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		c.mu.Lock()
		var busy []int
		for i, b := range c.status {
			if c.gone[i] {
				continue
			}
			if !b.at.After(since) || !b.status.Stopped || b.status.Pending > 0 || b.status.Inflight > 0 {
				busy = append(busy, i)
			}
		}
		c.mu.Unlock()
		if len(busy) == 0 {
			return nil
		}
		select {
		case <-c.changed:
		case <-t.C:
			return fmt.Errorf("workers %v still had trees in flight after %s", busy, timeout)
		}
	}
}

// Stop drains the workers (Drain, up to timeout), tells every worker to
// stop, gives them timeout to exit, kills the rest, and waits for every
// process and goroutine. It returns the errors of workers that failed or
// exited badly over the cluster's life (killed ones excepted), and a
// drain that did not finish.
func (c *Cluster) Stop(timeout time.Duration) error {
	drainErr := c.Drain(timeout)
	c.mu.Lock()
	if drainErr != nil {
		c.errs = append(c.errs, drainErr)
	}
	c.stopping = true
	procs := append([]*proc(nil), c.procs...)
	started := make([]bool, len(procs))
	for i, p := range procs {
		started[i] = p.started
	}
	c.mu.Unlock()
	for i, p := range procs {
		if started[i] { // one being started again has its stdin closed: it stops before "start"
			p.send(Message{Cmd: CmdStop})
		}
		p.stdin.Close() // end of input means stop too
	}
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		c.mu.Lock()
		procs = append(procs[:0], c.procs...)
		c.errs = append(c.errs, fmt.Errorf("workers did not all stop within %s; killed the rest", timeout))
		c.mu.Unlock()
		for _, p := range procs {
			p.cmd.Process.Kill()
		}
		<-done
	}
	for _, p := range procs {
		p.stdin.Close()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return errors.Join(c.errs...)
}

// isGone reports whether worker i died and is not being started again.
func (c *Cluster) isGone(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gone[i]
}
