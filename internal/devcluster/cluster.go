// Package devcluster runs a Gale cluster on this machine as child
// processes of a gale binary: an embedded etcd, nimbuses and
// supervisors, each started once the one before is ready, and stopped in
// order with the workers the supervisors started. `gale dev`, `gale
// demo` and the failover and chaos benches run one (Start); the ready
// lines the servers print (ready.go) and the reading of a process's
// output until its ready line (Watched) serve internal/clustertest too.
package devcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/gale-stream/gale/internal/config"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/cli"
	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/procstat"
)

// Config is a cluster to start: the settings of `gale dev`'s flags.
type Config struct {
	// Name is the program's name, in messages.
	Name string
	// Dir keeps the cluster's state, kept on exit; "" for a temporary
	// directory, removed by Stop.
	Dir string
	// File is a gale.yaml for nimbus and the supervisors; "" for none.
	File string
	// Defaults are settings for the cluster where File has none.
	Defaults gale.Config
	// Nimbuses is the number of nimbus processes (0: one); nimbus i
	// serves on NimbusPort+i.
	Nimbuses    int
	Supervisors int
	EtcdPort    int
	NimbusPort  int
	// SlotsPer is each supervisor's slots; supervisor i has the ports
	// from SlotBase+i*SlotsPer on.
	SlotsPer int
	SlotBase int
	// UIPort is the port of the web UI, the REST API and /metrics on
	// 127.0.0.1; 0 for none.
	UIPort int
	// Log gets the children's output, line by line and prefixed with
	// their role, and the cluster's messages.
	Log io.Writer
	// Hurry, closed, has Stop kill what it would stop in order (a
	// second Ctrl-C); nil for never.
	Hurry <-chan struct{}
}

// Slots are supervisor i's ports.
func (c *Config) Slots(i int) []int {
	ports := make([]int, c.SlotsPer)
	for j := range ports {
		ports[j] = c.SlotBase + i*c.SlotsPer + j
	}
	return ports
}

// Cluster is a running cluster. Its fields are set by Start, and the
// lists of children by Restart: use it from one goroutine.
type Cluster struct {
	// Name is the program's name, in messages.
	Name string
	// Dir is the state directory; Temporary says Stop removes it.
	Dir       string
	Temporary bool
	// Log is Config.Log, serialized.
	Log io.Writer

	Etcd *Child
	// Nimbuses are the nimbus processes, NimbusAddrs their addresses
	// (index for index); NimbusAddr is the first's.
	Nimbuses    []*Child
	Supervisors []*Child
	EtcdURL     string
	NimbusAddrs []string
	NimbusAddr  string
	// UI serves the web UI, the REST API and /metrics; nil for none.
	UI *cli.UIServer

	exe   string
	hurry <-chan struct{}
	// exited gets each child that exits; buffered for all of them.
	exited chan *Child
}

// Exited gets each child that exits, once.
func (d *Cluster) Exited() <-chan *Child { return d.exited }

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

// Child is one process of the cluster.
type Child struct {
	// Role names it: etcd, nimbus (nimbus-0, ... of several),
	// supervisor-0, ...
	Role string
	// Dir is its state directory.
	Dir string
	// Ports are a supervisor's slots.
	Ports []int
	Watched
	// args and ok are how it was started (Restart starts it again).
	args []string
	ok   func(string) (string, bool)
}

// Start starts etcd, nimbus and the supervisors, each once the one
// before is ready, and returns once all are. On an error, or ctx done
// while starting, it stops what it started.
func Start(ctx context.Context, cfg Config) (_ *Cluster, err error) {
	if err := supported(); err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this program's binary to run the cluster's processes: %w", err)
	}
	var file gale.Config
	var sec coord.Security // how the children reach the cluster's etcd
	if cfg.File != "" {
		// Checked here, once, rather than by each child as it starts.
		if file, err = config.LoadFile(cfg.File); err != nil {
			return nil, err
		}
		eff, err := config.Resolve(file, nil)
		if err != nil {
			return nil, err
		}
		if sec, err = etcdSecurity(eff); err != nil {
			return nil, err
		}
		if cfg.File, err = filepath.Abs(cfg.File); err != nil {
			return nil, err
		}
	}
	d := &Cluster{Name: cfg.Name, exe: exe, Log: &lockedWriter{w: cfg.Log}, hurry: cfg.Hurry,
		exited: make(chan *Child, 1+max(cfg.Nimbuses, 1)+cfg.Supervisors)}
	if cfg.Dir == "" {
		if d.Dir, err = os.MkdirTemp("", "gale-dev-"); err != nil {
			return nil, err
		}
		d.Temporary = true
	} else {
		if d.Dir, err = filepath.Abs(cfg.Dir); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(d.Dir, 0o755); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err != nil {
			if ctx.Err() != nil {
				err = errors.New("interrupted while the cluster started; what had started is stopped")
			}
			err = errors.Join(err, d.Stop())
		}
	}()
	fmt.Fprintf(d.Log, "%s dev: starting a cluster on 127.0.0.1, state in %s\n", d.Name, d.Dir)
	if len(cfg.Defaults) > 0 {
		if cfg.File, err = writeConfig(d.Dir, file, cfg.Defaults); err != nil {
			return nil, err
		}
	}

	etcdDir := filepath.Join(d.Dir, "etcd")
	etcdArgs := []string{"etcd", "--dir", etcdDir, "--listen", "http://127.0.0.1:" + strconv.Itoa(cfg.EtcdPort)}
	if sec.TLS() {
		etcdArgs = []string{"etcd", "--dir", etcdDir, "--listen", "https://127.0.0.1:" + strconv.Itoa(cfg.EtcdPort),
			"--cert-file", sec.CertFile, "--key-file", sec.KeyFile, "--trusted-ca-file", sec.CAFile, "--client-cert-auth"}
	}
	d.Etcd, err = d.start(ctx, "etcd", etcdDir, nil, EtcdReady, etcdArgs...)
	if err != nil {
		return nil, err
	}
	if d.EtcdURL, err = d.Await(ctx, d.Etcd); err != nil {
		return nil, err
	}
	if sec.Username != "" {
		actx, cancel := context.WithTimeout(ctx, childReadyTimeout)
		err := coord.EnableAuth(actx, []string{d.EtcdURL}, sec)
		cancel()
		if err != nil {
			return nil, err
		}
	}

	var fileArgs []string
	if cfg.File != "" {
		fileArgs = []string{"--file", cfg.File}
	}
	// One after the other: the first is the leader, as the lone one of
	// a cluster of one was.
	for i := range max(cfg.Nimbuses, 1) {
		role, port := "nimbus", cfg.NimbusPort
		if cfg.Nimbuses > 1 {
			role = "nimbus-" + strconv.Itoa(i)
			if port != 0 {
				port += i
			}
		}
		dir := filepath.Join(d.Dir, role)
		c, err := d.start(ctx, role, dir, nil, NimbusReady,
			append([]string{"nimbus", "--dir", dir, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--etcd", d.EtcdURL}, fileArgs...)...)
		if err != nil {
			return nil, err
		}
		d.Nimbuses = append(d.Nimbuses, c)
		addr, err := d.Await(ctx, c)
		if err != nil {
			return nil, err
		}
		d.NimbusAddrs = append(d.NimbusAddrs, addr)
	}
	d.NimbusAddr = d.NimbusAddrs[0]

	for i := range cfg.Supervisors {
		role := "supervisor-" + strconv.Itoa(i)
		dir := filepath.Join(d.Dir, role)
		ports := cfg.Slots(i)
		c, err := d.start(ctx, role, dir, ports, SupervisorReady,
			append([]string{"supervisor", "--dir", dir, "--host", "127.0.0.1", "--ports", JoinInts(ports, ","), "--etcd", d.EtcdURL}, fileArgs...)...)
		if err != nil {
			return nil, err
		}
		d.Supervisors = append(d.Supervisors, c)
	}
	for _, c := range d.Supervisors {
		if _, err := d.Await(ctx, c); err != nil {
			return nil, err
		}
	}
	if cfg.UIPort != 0 {
		d.startUI(cfg)
	}
	fmt.Fprintf(d.Log, "%s dev: the cluster is ready: nimbus at %s; Ctrl-C stops it\n", d.Name, d.NimbusAddr)
	return d, nil
}

// startUI serves the REST API and /metrics on 127.0.0.1:cfg.UIPort. A
// port it cannot have is a warning, not an error: the cluster works
// without its UI, and a second dev cluster, or another program on 8080,
// should not keep one from starting.
func (d *Cluster) startUI(cfg Config) {
	cc, err := (&cli.ClusterFlags{File: cfg.File, Nimbus: d.NimbusAddr}).ClientConfig()
	if err == nil {
		cc.Seeds = d.NimbusAddrs // whichever leads
		d.UI, err = cli.StartUI(net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.UIPort)), cc)
	}
	if err != nil {
		fmt.Fprintf(d.Log, "%s dev: warning: no REST API and /metrics: %v; the cluster runs without them (--ui-port PORT picks another port, 0 none)\n", d.Name, err)
	}
}

// writeConfig writes file with defaults for the keys it lacks as the
// cluster's gale.yaml under dir, and returns its path.
func writeConfig(dir string, file, defaults gale.Config) (string, error) {
	c := maps.Clone(defaults)
	maps.Copy(c, file)
	b, err := yaml.Marshal(c)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "gale.yaml")
	return p, os.WriteFile(p, b, 0o644)
}

// JoinInts joins ns with sep: a supervisor's --ports.
func JoinInts(ns []int, sep string) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, sep)
}

// start runs this program with args as the child role, its output going
// to the cluster's log line by line, prefixed with the role; ok accepts
// its ready line and yields what Await returns.
func (d *Cluster) start(ctx context.Context, role, dir string, ports []int, ok func(string) (string, bool), args ...string) (*Child, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	c := &Child{Role: role, Dir: dir, Ports: ports, args: args, ok: ok}
	prefix := "[" + role + "] "
	c.Cmd = exec.Command(d.exe, args...)
	// A process group of its own: a Ctrl-C at the terminal reaches dev
	// alone, which stops the cluster in order.
	c.Cmd.SysProcAttr = sysProcAttr()
	c.Cmd.Stdout = &prefixWriter{prefix: prefix, w: d.Log}
	c.Line = func(l string) { fmt.Fprintf(d.Log, "%s%s\n", prefix, l) }
	c.Ready = func(l string) bool { _, yes := ok(l); return yes }
	c.Exited = func() { d.exited <- c }
	if err := c.Watched.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", role, err)
	}
	return c, nil
}

// Restart starts a child that has exited again, with its directory,
// ports and arguments, in its place in the cluster's lists, and returns
// it; Await waits until it is ready.
func (d *Cluster) Restart(ctx context.Context, old *Child) (*Child, error) {
	<-old.Done()
	c, err := d.start(ctx, old.Role, old.Dir, old.Ports, old.ok, old.args...)
	if err != nil {
		return nil, fmt.Errorf("start %s again: %w", old.Role, err)
	}
	for _, cs := range [][]*Child{d.Supervisors, d.Nimbuses} {
		if i := slices.Index(cs, old); i >= 0 {
			cs[i] = c
		}
	}
	if d.Etcd == old {
		d.Etcd = c
	}
	return c, nil
}

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

// Await waits for c's ready line and returns what it says: etcd's URL, a
// nimbus's address, a supervisor's id.
func (d *Cluster) Await(ctx context.Context, c *Child) (string, error) {
	tm := time.NewTimer(childReadyTimeout)
	defer tm.Stop()
	select {
	case l := <-c.ReadyLine():
		v, _ := c.ok(l)
		return v, nil
	case <-c.Done():
		return "", fmt.Errorf("%s (pid %d) exited before it was ready: %v", c.Role, c.PID(), ExitReason(c.Err()))
	case <-ctx.Done():
		return "", ctx.Err()
	case <-tm.C:
		return "", fmt.Errorf("%s (pid %d) was not ready within %s (its output above, prefixed [%s], says why)", c.Role, c.PID(), childReadyTimeout, c.Role)
	}
}

// Children are the cluster's processes, in start order.
func (d *Cluster) Children() []*Child {
	var cs []*Child
	if d.Etcd != nil {
		cs = append(cs, d.Etcd)
	}
	cs = append(cs, d.Nimbuses...)
	return append(cs, d.Supervisors...)
}

// Report is what `gale dev` prints once the cluster is ready; --json
// prints it as is.
type Report struct {
	Dir       string        `json:"dir"`
	Temporary bool          `json:"temporary"`
	Etcd      ReportProcess `json:"etcd"`
	// Nimbus is the first nimbus, Nimbuses every one (--nimbuses).
	Nimbus      ReportProcess      `json:"nimbus"`
	Nimbuses    []ReportProcess    `json:"nimbuses"`
	Supervisors []ReportSupervisor `json:"supervisors"`
	// UI is the base URL of the REST API and /metrics; empty without one.
	UI string `json:"ui,omitempty"`
}

// ReportProcess is etcd or a nimbus in a Report.
type ReportProcess struct {
	Addr string `json:"addr"`
	PID  int    `json:"pid"`
	Dir  string `json:"dir"`
}

// ReportSupervisor is a supervisor in a Report.
type ReportSupervisor struct {
	Name  string `json:"name"`
	Ports []int  `json:"ports"`
	PID   int    `json:"pid"`
	Dir   string `json:"dir"`
}

// Report says where the cluster's processes are.
func (d *Cluster) Report() Report {
	r := Report{
		Dir: d.Dir, Temporary: d.Temporary,
		Etcd:        ReportProcess{Addr: d.EtcdURL, PID: d.Etcd.PID(), Dir: d.Etcd.Dir},
		Nimbus:      ReportProcess{Addr: d.NimbusAddr, PID: d.Nimbuses[0].PID(), Dir: d.Nimbuses[0].Dir},
		Nimbuses:    []ReportProcess{},
		Supervisors: []ReportSupervisor{},
	}
	for i, c := range d.Nimbuses {
		r.Nimbuses = append(r.Nimbuses, ReportProcess{Addr: d.NimbusAddrs[i], PID: c.PID(), Dir: c.Dir})
	}
	if d.UI != nil {
		r.UI = "http://" + d.UI.Addr
	}
	for _, c := range d.Supervisors {
		r.Supervisors = append(r.Supervisors, ReportSupervisor{Name: c.Role, Ports: c.Ports, PID: c.PID(), Dir: c.Dir})
	}
	return r
}

// Print shows the cluster; hint adds how to submit to it.
func (d *Cluster) Print(w io.Writer, asJSON, hint bool) error {
	r := d.Report()
	if asJSON {
		return cli.WriteJSON(w, r)
	}
	kept := "kept on exit"
	if r.Temporary {
		kept = "removed on exit"
	}
	fmt.Fprintf(w, "%s dev: a cluster on 127.0.0.1, state in %s (%s)\n", d.Name, r.Dir, kept)
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
		fmt.Fprintf(tw, "  %s\tslots %s\tpid %d\n", s.Name, JoinInts(s.Ports, ","), s.PID)
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
	_, err := fmt.Fprintf(w, "Submit a topology with \"%s submit NAME%s\"; Ctrl-C stops the cluster.\n", d.Name, flag)
	return err
}

// Wait runs until ctx is done or a child exits, then stops the cluster.
// A child's exit is an error naming it.
func (d *Cluster) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		fmt.Fprintf(d.Log, "%s dev: stopping the cluster (Ctrl-C again kills it at once)\n", d.Name)
		return d.Stop()
	case c := <-d.exited:
		err := fmt.Errorf("%s (pid %d) exited: %v; the rest of the cluster is stopped", c.Role, c.PID(), ExitReason(c.Err()))
		fmt.Fprintf(d.Log, "%s dev: %s exited; stopping the cluster\n", d.Name, c.Role)
		return errors.Join(err, d.Stop())
	}
}

// Grace periods of the stop: a supervisor, nimbus or etcd gets
// stopGrace after SIGTERM before it is killed, a worker workerGrace (it
// drains its trees in flight first, topology.shutdown.drain.timeout.secs).
const (
	stopGrace   = 15 * time.Second
	workerGrace = 10 * time.Second
)

// Stop stops the supervisors, then the workers they started, then
// nimbus, then etcd, and removes a temporary state directory. Nothing it
// started, nor any worker, is left running.
func (d *Cluster) Stop() error {
	var errs []error
	if d.UI != nil {
		errs = append(errs, d.UI.Stop())
	}
	d.terminate(d.Supervisors, stopGrace)
	errs = append(errs, d.stopWorkers())
	d.terminate(d.Nimbuses, stopGrace)
	if d.Etcd != nil {
		d.terminate([]*Child{d.Etcd}, stopGrace)
	}
	// Anything under the directory still running was started by the
	// cluster and outlived it: a worker started while it stopped.
	errs = append(errs, d.stopWorkers())
	if d.Temporary {
		errs = append(errs, os.RemoveAll(d.Dir))
	}
	return errors.Join(errs...)
}

// terminate sends SIGTERM to the children still running, and kills those
// still running after grace (or at once on a second Ctrl-C).
func (d *Cluster) terminate(cs []*Child, grace time.Duration) {
	for _, c := range cs {
		if c.Running() {
			terminateProcess(c.Cmd.Process)
		}
	}
	tm := time.NewTimer(grace)
	defer tm.Stop()
	kill := false
	for _, c := range cs {
		select {
		case <-c.Done():
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
		if kill && c.Running() {
			fmt.Fprintf(d.Log, "%s dev: killing %s (pid %d)\n", d.Name, c.Role, c.PID())
			c.Cmd.Process.Kill()
		}
	}
	for _, c := range cs {
		<-c.Done()
	}
}

// stopWorkers stops every process other than the cluster's own whose
// program lies under the cluster's directory: the workers
// its supervisors started, which outlive a supervisor by design.
func (d *Cluster) stopWorkers() error {
	find := func() ([]procstat.Process, error) { return d.WorkersUnder(d.Dir) }
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
		fmt.Fprintf(d.Log, "%s dev: killing worker pid %d\n", d.Name, p.PID)
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
	return fmt.Errorf("processes still running under %s after SIGKILL: %v", d.Dir, pidsOf(ps))
}

func pidsOf(ps []procstat.Process) []int {
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = p.PID
	}
	return out
}

// KillSupervisor kills supervisor c and every process under its
// directory (the workers it started) with SIGKILL, as the loss of its
// machine would, and waits until they are gone. It returns how many
// workers it killed. c's exit still arrives on Exited: the caller, which
// asked for it, takes it as no error; Stop skips what is gone.
func (d *Cluster) KillSupervisor(c *Child) (workers int, err error) {
	if c.Running() {
		c.Cmd.Process.Kill()
	}
	<-c.Done()
	// The supervisor is gone, so no worker starts under its directory
	// after this look; each is killed at once, not stopped.
	killed := make(map[int]bool)
	for range 100 {
		ps, err := d.WorkersUnder(c.Dir)
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
	ps, _ := d.WorkersUnder(c.Dir)
	return len(killed), fmt.Errorf("processes still running under %s after SIGKILL: %v", c.Dir, pidsOf(ps))
}

// WorkersUnder lists the processes other than the cluster's own whose
// program lies under dir: the workers of the supervisors
// whose directories are under it.
func (d *Cluster) WorkersUnder(dir string) ([]procstat.Process, error) {
	ours := make(map[int]bool)
	for _, c := range d.Children() {
		ours[c.PID()] = true
	}
	ps, err := procstat.Running(dir)
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

// etcdSecurity is how dev secures its own etcd from the gale.etcd.*
// settings of the cluster's gale.yaml, which its nimbus and supervisors
// read to reach it: with gale.etcd.tls.*, etcd serves TLS with
// gale.etcd.tls.cert and .key (a certificate that serves 127.0.0.1 and
// is a client's too) and accepts only the clients of gale.etcd.tls.ca;
// with gale.etcd.username, dev turns etcd's auth on for that user.
func etcdSecurity(eff *config.Effective) (coord.Security, error) {
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
