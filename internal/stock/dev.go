package stock

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/spf13/cobra"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/proclist"

	"github.com/gale-stream/gale/internal/cli"
)

// devFlags are the flags of `dev` (and `demo`).
type devFlags struct {
	dir  string
	file string // a gale.yaml for nimbus and the supervisors
	// defaults are settings for the cluster where the gale.yaml of file
	// has none (demo's report frequency).
	defaults     gale.Config
	nimbuses     int  // 0: one
	nimbusesFlag bool // dev has --nimbuses (demo, one nimbus, has not)
	supervisors  int
	etcdPort     int
	nimbusPort   int
	slotsPer     int
	slotBase     int
	uiPort       int // 0: no UI
	asJSON       bool
}

// bind binds the flags; withJSON adds --json.
func (f *devFlags) bind(cmd *cobra.Command, withJSON bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.file, "file", "", "the cluster's gale.yaml `FILE`, for nimbus and every supervisor")
	fl.StringVar(&f.dir, "dir", "", "the `directory` to keep the cluster's state in, kept on exit (default: a temporary directory, removed on exit)")
	fl.IntVar(&f.supervisors, "supervisors", 2, "supervisor processes")
	fl.IntVar(&f.etcdPort, "etcd-port", 2379, "etcd's client port")
	fl.IntVar(&f.nimbusPort, "nimbus-port", 6627, "nimbus's API port")
	fl.IntVar(&f.slotsPer, "slots-per", 4, "worker slots of each supervisor")
	fl.IntVar(&f.slotBase, "slot-base", 6700, "the first slot's port: supervisor i has slot-base+i*slots-per and the next slots-per-1")
	fl.IntVar(&f.uiPort, "ui-port", 8080, "the port of the web UI (/), the REST API (/api/v1) and /metrics on 127.0.0.1; 0 for none")
	if withJSON {
		fl.BoolVar(&f.asJSON, "json", false, "print the cluster's addresses and pids as one JSON document")
	}
}

func (f *devFlags) check() error {
	var errs []error
	if f.supervisors < 0 {
		errs = append(errs, fmt.Errorf("--supervisors must be ≥ 0, got %d", f.supervisors))
	}
	if f.nimbuses < 1 && f.nimbusesFlag {
		errs = append(errs, fmt.Errorf("--nimbuses must be ≥ 1, got %d", f.nimbuses))
	} else if last := f.nimbusPort + f.nimbuses - 1; f.nimbusPort != 0 && f.nimbusPort <= 65535 && last > 65535 {
		errs = append(errs, fmt.Errorf("--nimbus-port %d with %d nimbuses needs ports %d to %d: keep them within 1 to 65535",
			f.nimbusPort, f.nimbuses, f.nimbusPort, last))
	}
	if f.slotsPer < 1 {
		errs = append(errs, fmt.Errorf("--slots-per must be ≥ 1, got %d", f.slotsPer))
	}
	for _, p := range []struct {
		flag string
		port int
	}{{"--etcd-port", f.etcdPort}, {"--nimbus-port", f.nimbusPort}, {"--ui-port", f.uiPort}} {
		if p.port < 0 || p.port > 65535 {
			errs = append(errs, fmt.Errorf("%s must be a port from 0 to 65535, got %d", p.flag, p.port))
		}
	}
	if last := f.slotBase + f.supervisors*f.slotsPer - 1; f.slotBase < 1 || last > 65535 {
		errs = append(errs, fmt.Errorf("--slot-base %d with %d supervisors of %d slots needs ports %d to %d: keep them within 1 to 65535",
			f.slotBase, f.supervisors, f.slotsPer, f.slotBase, last))
	}
	return errors.Join(errs...)
}

// slots are supervisor i's ports.
func (f *devFlags) slots(i int) []int {
	ports := make([]int, f.slotsPer)
	for j := range ports {
		ports[j] = f.slotBase + i*f.slotsPer + j
	}
	return ports
}

func newDevCmd(opts *cli.Options) *cobra.Command {
	f := devFlags{nimbuses: 1, nimbusesFlag: true}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a whole cluster on this machine: etcd, nimbus and supervisors, until Ctrl-C",
		Long: `Run a cluster on 127.0.0.1 as child processes of this program: an embedded
single-node etcd, --nimbuses nimbuses (one leads, the others stand by; nimbus
i serves on --nimbus-port+i) and --supervisors supervisors, each with
--slots-per worker slots. Once all are ready it prints their addresses and
pids (--json: one JSON document) and runs until Ctrl-C (SIGINT or SIGTERM),
then stops the supervisors, the workers they started, nimbus and etcd, in
that order. A second Ctrl-C kills them at once. If one of them dies, dev
says which, stops the rest and exits 1.

The cluster's state is kept under --dir (default: a temporary directory,
removed on exit). Topologies are submitted to it with "submit" (nimbus.seeds'
default, 127.0.0.1, with the default --nimbus-port, names this nimbus).

With a --file whose gale.yaml sets gale.etcd.tls.ca, .cert and .key, etcd
serves TLS with that certificate (it must serve 127.0.0.1 too) and accepts
only clients of that CA; with gale.etcd.username and a password, dev turns
etcd's auth on for that user. Nimbus and the supervisors read the same keys.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return cli.Usage(err)
			}
			hurry, stopSignals := hurrySignal()
			defer stopSignals()
			d, err := startDev(cmd.Context(), opts, f, cmd.ErrOrStderr(), hurry)
			if err != nil {
				return err
			}
			if err := d.print(cmd.OutOrStdout(), f.asJSON, true); err != nil {
				return errors.Join(err, d.stop())
			}
			return d.wait(cmd.Context())
		},
	}
	f.bind(cmd, true)
	cmd.Flags().IntVar(&f.nimbuses, "nimbuses", f.nimbuses, "nimbus processes: one leads, the others stand by (nimbus i serves on --nimbus-port+i)")
	return cmd
}

// hurrySignal is closed on the second SIGINT or SIGTERM: the first asks
// the cluster to stop in order (Run's context), the second to kill its
// processes at once. Listening for them here keeps the default action,
// which would kill dev and leave its children running, from happening.
func hurrySignal() (<-chan struct{}, func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	hurry := make(chan struct{})
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(hurry)
		for n := 0; n < 2; n++ {
			select {
			case <-ch:
			case <-done:
				return
			}
		}
	})
	return hurry, func() {
		signal.Stop(ch)
		close(done)
		wg.Wait()
	}
}

// devCluster is a running dev cluster.
type devCluster struct {
	name    string // the program's, in messages
	exe     string
	dir     string
	tempDir bool
	log     *lockedWriter // dev's stderr
	hurry   <-chan struct{}

	etcd *child
	// nimbuses are the nimbus processes, nimbusAddrs their addresses
	// (index for index); nimbusAddr is the first's.
	nimbuses    []*child
	supervisors []*child
	etcdURL     string
	nimbusAddrs []string
	nimbusAddr  string
	ui          *cli.UIServer // nil: none
	// exited gets each child that exits; buffered for all of them.
	exited chan *child
}

// lockedWriter serializes the lines of several children.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// child is one process of the cluster.
type child struct {
	role  string // etcd, nimbus (nimbus-0, ... of several), supervisor-0, ...
	dir   string
	ports []int // a supervisor's slots
	cmd   *exec.Cmd
	// args and ok are how it was started (restart starts it again).
	args []string
	ok   func(string) (string, bool)
	// ready gets the first line ok accepts on the child's stderr.
	ready chan string
	done  chan struct{} // closed once it exited and its stderr was read
	err   error         // how it exited, set before done closes
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// running says whether the child has not exited.
func (c *child) running() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// startDev starts etcd, nimbus and the supervisors, each once the one
// before is ready, and returns once all are. On an error, or ctx done
// while starting, it stops what it started.
func startDev(ctx context.Context, opts *cli.Options, f devFlags, stderr io.Writer, hurry <-chan struct{}) (_ *devCluster, err error) {
	if err := devSupported(); err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this program's binary to run the cluster's processes: %w", err)
	}
	var file gale.Config
	var sec coord.Security // how the children reach dev's etcd
	if f.file != "" {
		// Checked here, once, rather than by each child as it starts.
		if file, err = config.LoadFile(f.file); err != nil {
			return nil, err
		}
		eff, err := config.Resolve(file, nil)
		if err != nil {
			return nil, err
		}
		if sec, err = devEtcdSecurity(eff); err != nil {
			return nil, err
		}
		if f.file, err = filepath.Abs(f.file); err != nil {
			return nil, err
		}
	}
	d := &devCluster{name: opts.Name, exe: exe, log: &lockedWriter{w: stderr}, hurry: hurry,
		exited: make(chan *child, 1+max(f.nimbuses, 1)+f.supervisors)}
	if f.dir == "" {
		if d.dir, err = os.MkdirTemp("", "gale-dev-"); err != nil {
			return nil, err
		}
		d.tempDir = true
	} else {
		if d.dir, err = filepath.Abs(f.dir); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(d.dir, 0o755); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err != nil {
			if ctx.Err() != nil {
				err = errors.New("interrupted while the cluster started; what had started is stopped")
			}
			err = errors.Join(err, d.stop())
		}
	}()
	fmt.Fprintf(d.log, "%s dev: starting a cluster on 127.0.0.1, state in %s\n", d.name, d.dir)
	if len(f.defaults) > 0 {
		if f.file, err = writeDevConfig(d.dir, file, f.defaults); err != nil {
			return nil, err
		}
	}

	etcdDir := filepath.Join(d.dir, "etcd")
	etcdArgs := []string{"etcd", "--dir", etcdDir, "--listen", "http://127.0.0.1:" + strconv.Itoa(f.etcdPort)}
	if sec.TLS() {
		etcdArgs = []string{"etcd", "--dir", etcdDir, "--listen", "https://127.0.0.1:" + strconv.Itoa(f.etcdPort),
			"--cert-file", sec.CertFile, "--key-file", sec.KeyFile, "--trusted-ca-file", sec.CAFile, "--client-cert-auth"}
	}
	d.etcd, err = d.start(ctx, "etcd", etcdDir, nil, readyAfter(" etcd: serving on "), etcdArgs...)
	if err != nil {
		return nil, err
	}
	if d.etcdURL, err = d.await(ctx, d.etcd); err != nil {
		return nil, err
	}
	if sec.Username != "" {
		actx, cancel := context.WithTimeout(ctx, childReadyTimeout)
		err := coord.EnableAuth(actx, []string{d.etcdURL}, sec)
		cancel()
		if err != nil {
			return nil, err
		}
	}

	var fileArgs []string
	if f.file != "" {
		fileArgs = []string{"--file", f.file}
	}
	// One after the other: the first is the leader, as the lone one of
	// a cluster of one was.
	for i := range max(f.nimbuses, 1) {
		role, port := "nimbus", f.nimbusPort
		if f.nimbuses > 1 {
			role = "nimbus-" + strconv.Itoa(i)
			if port != 0 {
				port += i
			}
		}
		dir := filepath.Join(d.dir, role)
		c, err := d.start(ctx, role, dir, nil, readyAfter(" nimbus: serving on "),
			append([]string{"nimbus", "--dir", dir, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--etcd", d.etcdURL}, fileArgs...)...)
		if err != nil {
			return nil, err
		}
		d.nimbuses = append(d.nimbuses, c)
		addr, err := d.await(ctx, c)
		if err != nil {
			return nil, err
		}
		d.nimbusAddrs = append(d.nimbusAddrs, addr)
	}
	d.nimbusAddr = d.nimbusAddrs[0]

	for i := range f.supervisors {
		role := "supervisor-" + strconv.Itoa(i)
		dir := filepath.Join(d.dir, role)
		ports := f.slots(i)
		c, err := d.start(ctx, role, dir, ports, supervisorReady,
			append([]string{"supervisor", "--dir", dir, "--host", "127.0.0.1", "--ports", joinInts(ports, ","), "--etcd", d.etcdURL}, fileArgs...)...)
		if err != nil {
			return nil, err
		}
		d.supervisors = append(d.supervisors, c)
	}
	for _, c := range d.supervisors {
		if _, err := d.await(ctx, c); err != nil {
			return nil, err
		}
	}
	if f.uiPort != 0 {
		d.startUI(f)
	}
	fmt.Fprintf(d.log, "%s dev: the cluster is ready: nimbus at %s; Ctrl-C stops it\n", d.name, d.nimbusAddr)
	return d, nil
}

// startUI serves the REST API and /metrics on 127.0.0.1:--ui-port. A
// port it cannot have is a warning, not an error: the cluster works
// without its UI, and a second dev cluster, or another program on 8080,
// should not keep one from starting.
func (d *devCluster) startUI(f devFlags) {
	cc, err := (&cli.ClusterFlags{File: f.file, Nimbus: d.nimbusAddr}).ClientConfig()
	if err == nil {
		cc.Seeds = d.nimbusAddrs // whichever leads
		d.ui, err = cli.StartUI(net.JoinHostPort("127.0.0.1", strconv.Itoa(f.uiPort)), cc)
	}
	if err != nil {
		fmt.Fprintf(d.log, "%s dev: warning: no REST API and /metrics: %v; the cluster runs without them (--ui-port PORT picks another port, 0 none)\n", d.name, err)
	}
}

// writeDevConfig writes file with defaults for the keys it lacks as the
// cluster's gale.yaml under dir, and returns its path.
func writeDevConfig(dir string, file, defaults gale.Config) (string, error) {
	c := maps.Clone(defaults)
	maps.Copy(c, file)
	b, err := yaml.Marshal(c)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "gale.yaml")
	return p, os.WriteFile(p, b, 0o644)
}

// readyAfter accepts a line with marker and yields the word after it:
// "gale nimbus: serving on 127.0.0.1:6627 (id n1)" → 127.0.0.1:6627.
func readyAfter(marker string) func(string) (string, bool) {
	return func(l string) (string, bool) {
		i := strings.Index(l, marker)
		if i < 0 {
			return "", false
		}
		w, _, _ := strings.Cut(strings.TrimSpace(l[i+len(marker):]), " ")
		return w, w != ""
	}
}

// supervisorReady accepts a supervisor's ready line,
// "gale supervisor: … slots 6700,6701".
func supervisorReady(l string) (string, bool) {
	return l, strings.Contains(l, " supervisor: ") && strings.Contains(l, " slots ")
}

func joinInts(ns []int, sep string) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, sep)
}

// start runs this program with args as the child role, its output going
// to dev's stderr line by line, prefixed with the role.
func (d *devCluster) start(ctx context.Context, role, dir string, ports []int, ok func(string) (string, bool), args ...string) (*child, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	c := &child{role: role, dir: dir, ports: ports, args: args, ok: ok, ready: make(chan string, 1), done: make(chan struct{})}
	c.cmd = exec.Command(d.exe, args...)
	// A process group of its own: a Ctrl-C at the terminal reaches dev
	// alone, which stops the cluster in order.
	c.cmd.SysProcAttr = devSysProcAttr()
	prefix := "[" + role + "] "
	c.cmd.Stdout = &prefixWriter{prefix: prefix, w: d.log}
	// A process the child starts may hold its output open after it exits
	// (a worker given the supervisor's stderr): Wait waits only so long
	// for stdout, and the stderr reader below is cut off as long after.
	c.cmd.WaitDelay = pipeGrace
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	c.cmd.Stderr = w
	err = c.cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("start %s: %w", role, err)
	}
	eof := make(chan struct{})
	go func() { // ends at the end of the child's stderr, or when r is closed
		defer close(eof)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		readied := false
		for sc.Scan() {
			l := sc.Text()
			fmt.Fprintf(d.log, "%s%s\n", prefix, l)
			if !readied {
				if v, yes := ok(l); yes {
					readied = true
					c.ready <- v
				}
			}
		}
	}()
	go func() { // ends once the child has exited: done closes
		c.err = c.cmd.Wait()
		tm := time.NewTimer(pipeGrace)
		select {
		case <-eof:
		case <-tm.C:
		}
		tm.Stop()
		r.Close()
		<-eof
		close(c.done)
		d.exited <- c
	}()
	return c, nil
}

// pipeGrace is how long dev reads a child's output after it exited.
const pipeGrace = 5 * time.Second

// prefixWriter writes each line with a prefix.
type prefixWriter struct {
	prefix string
	w      io.Writer
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		if _, err := fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf[:i]); err != nil {
			return len(b), err
		}
		p.buf = p.buf[i+1:]
	}
}

// childReadyTimeout bounds a child's start: etcd's first start on a cold
// disk, or a supervisor's, takes seconds, not minutes.
const childReadyTimeout = 2 * time.Minute

// await waits for c's ready line and returns what its ok yielded.
func (d *devCluster) await(ctx context.Context, c *child) (string, error) {
	tm := time.NewTimer(childReadyTimeout)
	defer tm.Stop()
	select {
	case v := <-c.ready:
		return v, nil
	case <-c.done:
		return "", fmt.Errorf("%s (pid %d) exited before it was ready: %v", c.role, c.pid(), exitReason(c.err))
	case <-ctx.Done():
		return "", ctx.Err()
	case <-tm.C:
		return "", fmt.Errorf("%s (pid %d) was not ready within %s (its output above, prefixed [%s], says why)", c.role, c.pid(), childReadyTimeout, c.role)
	}
}

func exitReason(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// children are the cluster's processes, in start order.
func (d *devCluster) children() []*child {
	var cs []*child
	if d.etcd != nil {
		cs = append(cs, d.etcd)
	}
	cs = append(cs, d.nimbuses...)
	return append(cs, d.supervisors...)
}

// devReport is what dev prints once the cluster is ready; --json prints
// it as is.
type devReport struct {
	Dir       string     `json:"dir"`
	Temporary bool       `json:"temporary"`
	Etcd      devProcess `json:"etcd"`
	// Nimbus is the first nimbus, Nimbuses every one (--nimbuses).
	Nimbus      devProcess      `json:"nimbus"`
	Nimbuses    []devProcess    `json:"nimbuses"`
	Supervisors []devSupervisor `json:"supervisors"`
	// UI is the base URL of the REST API and /metrics; empty without one.
	UI string `json:"ui,omitempty"`
}

type devProcess struct {
	Addr string `json:"addr"`
	PID  int    `json:"pid"`
	Dir  string `json:"dir"`
}

type devSupervisor struct {
	Name  string `json:"name"`
	Ports []int  `json:"ports"`
	PID   int    `json:"pid"`
	Dir   string `json:"dir"`
}

func (d *devCluster) report() devReport {
	r := devReport{
		Dir: d.dir, Temporary: d.tempDir,
		Etcd:        devProcess{Addr: d.etcdURL, PID: d.etcd.pid(), Dir: d.etcd.dir},
		Nimbus:      devProcess{Addr: d.nimbusAddr, PID: d.nimbuses[0].pid(), Dir: d.nimbuses[0].dir},
		Nimbuses:    []devProcess{},
		Supervisors: []devSupervisor{},
	}
	for i, c := range d.nimbuses {
		r.Nimbuses = append(r.Nimbuses, devProcess{Addr: d.nimbusAddrs[i], PID: c.pid(), Dir: c.dir})
	}
	if d.ui != nil {
		r.UI = "http://" + d.ui.Addr
	}
	for _, c := range d.supervisors {
		r.Supervisors = append(r.Supervisors, devSupervisor{Name: c.role, Ports: c.ports, PID: c.pid(), Dir: c.dir})
	}
	return r
}

// print shows the cluster; hint adds how to submit to it.
func (d *devCluster) print(w io.Writer, asJSON, hint bool) error {
	r := d.report()
	if asJSON {
		return cli.WriteJSON(w, r)
	}
	kept := "kept on exit"
	if r.Temporary {
		kept = "removed on exit"
	}
	fmt.Fprintf(w, "%s dev: a cluster on 127.0.0.1, state in %s (%s)\n", d.name, r.Dir, kept)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  etcd\t%s\tpid %d\n", r.Etcd.Addr, r.Etcd.PID)
	for i, n := range r.Nimbuses {
		role := "nimbus"
		if len(r.Nimbuses) > 1 {
			role += "-" + strconv.Itoa(i)
		}
		fmt.Fprintf(tw, "  %s\t%s\tpid %d\n", role, n.Addr, n.PID)
	}
	for _, s := range r.Supervisors {
		fmt.Fprintf(tw, "  %s\tslots %s\tpid %d\n", s.Name, joinInts(s.Ports, ","), s.PID)
	}
	if r.UI != "" {
		fmt.Fprintf(tw, "  ui\t%s/\t%s/api/v1\t%s/metrics\n", r.UI, r.UI, r.UI)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !hint {
		return nil
	}
	flag := ""
	if r.Nimbus.Addr != "127.0.0.1:6627" {
		flag = " --nimbus " + r.Nimbus.Addr
	}
	_, err := fmt.Fprintf(w, "Submit a topology with \"%s submit NAME%s\"; Ctrl-C stops the cluster.\n", d.name, flag)
	return err
}

// wait runs until ctx is done or a child exits, then stops the cluster.
// A child's exit is an error naming it.
func (d *devCluster) wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		fmt.Fprintf(d.log, "%s dev: stopping the cluster (Ctrl-C again kills it at once)\n", d.name)
		return d.stop()
	case c := <-d.exited:
		err := fmt.Errorf("%s (pid %d) exited: %v; the rest of the cluster is stopped", c.role, c.pid(), exitReason(c.err))
		fmt.Fprintf(d.log, "%s dev: %s exited; stopping the cluster\n", d.name, c.role)
		return errors.Join(err, d.stop())
	}
}

// Grace periods of the stop: a supervisor, nimbus or etcd gets
// stopGrace after SIGTERM before it is killed, a worker workerGrace (it
// drains its trees in flight first, topology.shutdown.drain.timeout.secs).
const (
	stopGrace   = 15 * time.Second
	workerGrace = 10 * time.Second
)

// stop stops the supervisors, then the workers they started, then
// nimbus, then etcd, and removes a temporary state directory. Nothing it
// started, nor any worker, is left running.
func (d *devCluster) stop() error {
	var errs []error
	if d.ui != nil {
		errs = append(errs, d.ui.Stop())
	}
	d.terminate(d.supervisors, stopGrace)
	errs = append(errs, d.stopWorkers())
	d.terminate(d.nimbuses, stopGrace)
	if d.etcd != nil {
		d.terminate([]*child{d.etcd}, stopGrace)
	}
	// Anything under the directory still running was started by the
	// cluster and outlived it: a worker started while it stopped.
	errs = append(errs, d.stopWorkers())
	if d.tempDir {
		errs = append(errs, os.RemoveAll(d.dir))
	}
	return errors.Join(errs...)
}

// terminate sends SIGTERM to the children still running, and kills those
// still running after grace (or at once on a second Ctrl-C).
func (d *devCluster) terminate(cs []*child, grace time.Duration) {
	for _, c := range cs {
		if c.running() {
			terminateProcess(c.cmd.Process)
		}
	}
	tm := time.NewTimer(grace)
	defer tm.Stop()
	kill := false
	for _, c := range cs {
		select {
		case <-c.done:
		case <-tm.C:
			kill = true
		case <-d.hurry:
			kill = true
		}
		if kill {
			break
		}
	}
	for _, c := range cs {
		if kill && c.running() {
			fmt.Fprintf(d.log, "%s dev: killing %s (pid %d)\n", d.name, c.role, c.pid())
			c.cmd.Process.Kill()
		}
	}
	for _, c := range cs {
		<-c.done
	}
}

// stopWorkers stops every process other than the cluster's own whose
// program lies under the cluster's directory: the workers
// its supervisors started, which outlive a supervisor by design.
func (d *devCluster) stopWorkers() error {
	ours := make(map[int]bool)
	for _, c := range d.children() {
		ours[c.pid()] = true
	}
	find := func() ([]proclist.Proc, error) {
		ps, err := proclist.Running(d.dir)
		if err != nil {
			return nil, err
		}
		out := ps[:0]
		for _, p := range ps {
			if !ours[p.PID] {
				out = append(out, p)
			}
		}
		return out, nil
	}
	ps, err := find()
	if err != nil || len(ps) == 0 {
		return err
	}
	for _, p := range ps {
		if proc, err := os.FindProcess(p.PID); err == nil {
			terminateProcess(proc)
		}
	}
	deadline := time.Now().Add(workerGrace)
	tk := time.NewTicker(50 * time.Millisecond)
	defer tk.Stop()
	for {
		if ps, err = find(); err != nil || len(ps) == 0 {
			return err
		}
		if time.Now().After(deadline) {
			break
		}
		select {
		case <-tk.C:
		case <-d.hurry:
			deadline = time.Now()
		}
	}
	for _, p := range ps {
		fmt.Fprintf(d.log, "%s dev: killing worker pid %d\n", d.name, p.PID)
		if proc, err := os.FindProcess(p.PID); err == nil {
			proc.Kill()
		}
	}
	// Killed processes vanish once their parent, a supervisor that has
	// exited, hands them to init: wait for that briefly.
	for range 100 {
		if ps, err = find(); err != nil || len(ps) == 0 {
			return err
		}
		<-tk.C
	}
	return fmt.Errorf("processes still running under %s after SIGKILL: %v", d.dir, pidsOf(ps))
}

func pidsOf(ps []proclist.Proc) []int {
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = p.PID
	}
	return out
}

// killSupervisor kills supervisor c and every process under its
// directory (the workers it started) with SIGKILL, as the loss of its
// machine would, and waits until they are gone. It returns how many
// workers it killed. c's exit still arrives on exited: the caller, which
// asked for it, takes it as no error; stop skips what is gone.
func (d *devCluster) killSupervisor(c *child) (workers int, err error) {
	if c.running() {
		c.cmd.Process.Kill()
	}
	<-c.done
	// The supervisor is gone, so no worker starts under its directory
	// after this look; each is killed at once, not stopped.
	killed := make(map[int]bool)
	for range 100 {
		ps, err := d.workersUnder(c.dir)
		if err != nil {
			return len(killed), err
		}
		if len(ps) == 0 {
			return len(killed), nil
		}
		for _, p := range ps {
			if proc, err := os.FindProcess(p.PID); err == nil {
				proc.Kill()
			}
			killed[p.PID] = true
		}
		time.Sleep(20 * time.Millisecond) // a killed process lingers until init reaps it
	}
	ps, _ := d.workersUnder(c.dir)
	return len(killed), fmt.Errorf("processes still running under %s after SIGKILL: %v", c.dir, pidsOf(ps))
}

// workersUnder lists the processes other than the cluster's own whose
// program lies under dir: the workers of the supervisors
// whose directories are under it.
func (d *devCluster) workersUnder(dir string) ([]proclist.Proc, error) {
	ours := make(map[int]bool)
	for _, c := range d.children() {
		ours[c.pid()] = true
	}
	ps, err := proclist.Running(dir)
	if err != nil {
		return nil, err
	}
	out := ps[:0]
	for _, p := range ps {
		if !ours[p.PID] {
			out = append(out, p)
		}
	}
	return out, nil
}

// devEtcdSecurity is how dev secures its own etcd from the gale.etcd.*
// settings of the cluster's gale.yaml, which its nimbus and supervisors
// read to reach it: with gale.etcd.tls.*, etcd serves TLS with
// gale.etcd.tls.cert and .key (a certificate that serves 127.0.0.1 and
// is a client's too) and accepts only the clients of gale.etcd.tls.ca;
// with gale.etcd.username, dev turns etcd's auth on for that user.
func devEtcdSecurity(eff *config.Effective) (coord.Security, error) {
	sec, err := coord.SecurityFromConfig(eff)
	if err != nil {
		return sec, err
	}
	if sec.TLS() && (sec.CAFile == "" || sec.CertFile == "") {
		return sec, fmt.Errorf("dev serves its etcd with TLS when the gale.yaml sets %s: it needs %s (the CA of its clients) and %s with %s (its certificate, for 127.0.0.1, and every process's)",
			config.GaleEtcdTLSCA, config.GaleEtcdTLSCA, config.GaleEtcdTLSCert, config.GaleEtcdTLSKey)
	}
	return sec, nil
}
