//go:build unix

package clustertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/devcluster"
	"github.com/gale-stream/gale/internal/nimbuspb"
	"github.com/gale-stream/gale/internal/procstat"
	"github.com/gale-stream/gale/internal/testutil"
)

// Fleet is a cluster whose every process the test owns: etcd, nimbuses
// and supervisors, each a Proc that the test can kill, pause and
// restart (Launch starts one; NewFleet and the Start methods build one
// process by process). The workers are the supervisors' children, as in
// production. At the end of the test everything under the fleet's Dir
// is stopped, and the test fails if a process exited on its own or
// something is left running once the fleet has stopped.
//
// Built process by process, each on a Host of its own, a fleet spans
// network namespaces (internal/netnstest): etcd and nimbus on the main
// host's address of the Net, a supervisor in each host. Bound beyond
// loopback, nimbus needs nimbus.auth.token in the Config, which the
// fleet's commands (Gale) pass on.
//
//	f := clustertest.NewFleet(t, clustertest.Options{Config: "nimbus.auth.token: secret\n"})
//	main := clustertest.Host{Addr: n.Addr()}
//	f.StartEtcd(t, main)
//	f.StartNimbus(t, main)
//	h := n.Host("s1")
//	f.StartSupervisor(t, clustertest.Host{Addr: h.Addr(), Command: h.Command})
//	f.WaitSupervisors(t, 1)
//
// A Fleet's methods are for the test's goroutine; Proc's are safe for
// concurrent use.
type Fleet struct {
	// Dir holds the fleet's state: a directory per process.
	Dir string
	// Etcd is the etcd process (nil until StartEtcd).
	Etcd *Proc
	// Nimbuses and Supervisors are in the order started.
	Nimbuses, Supervisors []*Proc

	config   string // the cluster's gale.yaml for nimbus and supervisors ("" for none)
	slotsPer int
	t        testing.TB

	tls *fleetTLS // nil unless Options.EtcdTLS

	storeOnce sync.Once
	store     *coord.Store
	client    interface{ Close() error }
	storeErr  error
}

// NewFleet makes an empty fleet (o's Config and SlotsPer apply to the
// processes started on it); its cleanup at the end of the test stops
// what runs under it and checks that nothing is left.
func NewFleet(t testing.TB, o Options) *Fleet {
	t.Helper()
	if o.SlotsPer == 0 {
		o.SlotsPer = 2
	}
	// Short: supervisors keep unix sockets under it (108 bytes at most).
	dir, err := os.MkdirTemp("", "gale-fl-")
	if err != nil {
		t.Fatal(err)
	}
	f := &Fleet{Dir: dir, slotsPer: o.SlotsPer, t: t}
	if o.EtcdTLS {
		f.tls = newFleetTLS(t, filepath.Join(dir, "tls"))
		o.Config += f.tls.config()
	}
	if o.Config != "" {
		f.config = filepath.Join(dir, "gale.yaml")
		if err := os.WriteFile(f.config, []byte(o.Config), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if err := f.stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			for _, p := range f.procs() {
				t.Logf("%s output:\n%s", p.Role, p.Output())
			}
		}
		os.RemoveAll(dir)
	})
	return f
}

// Launch starts a fleet: etcd, o.Nimbuses nimbuses (default 1) and
// o.Supervisors supervisors (default 2) of o.SlotsPer slots, all on
// o.Host, and waits until a nimbus leads and lists every supervisor.
func Launch(t testing.TB, o Options) *Fleet {
	t.Helper()
	if o.Supervisors == 0 {
		o.Supervisors = 2
	}
	if o.Nimbuses == 0 {
		o.Nimbuses = 1
	}
	f := NewFleet(t, o)
	f.StartEtcd(t, o.Host)
	for range o.Nimbuses {
		f.StartNimbus(t, o.Host)
	}
	for range o.Supervisors {
		f.StartSupervisor(t, o.Host)
	}
	f.WaitSupervisors(t, o.Supervisors)
	return f
}

// EtcdURL is etcd's client URL.
func (f *Fleet) EtcdURL() string {
	if f.Etcd == nil {
		f.t.Fatal("clustertest: the fleet has no etcd: StartEtcd first")
	}
	return f.Etcd.Addr
}

// StartEtcd starts etcd on a free port of h's address and waits until it
// serves.
func (f *Fleet) StartEtcd(t testing.TB, h Host) *Proc {
	t.Helper()
	h = h.withDefaults()
	dir := filepath.Join(f.Dir, "etcd")
	var secure []string
	scheme := "http://"
	if f.tls != nil {
		secure, scheme = f.tls.serverArgs(t, h.Addr), "https://"
	}
	p := f.startRetrying(t, "etcd", dir, h, 1, func(ports []int) []string {
		return append([]string{"etcd", "--dir", dir, "--listen", scheme + net.JoinHostPort(h.Addr, strconv.Itoa(ports[0]))}, secure...)
	}, devcluster.EtcdReady)
	p.Addr = p.ready
	f.Etcd = p
	return p
}

// StartNimbus starts a nimbus on a free port of h's address, with the
// fleet's config, and waits until it serves (it may stand by).
func (f *Fleet) StartNimbus(t testing.TB, h Host) *Proc {
	t.Helper()
	h = h.withDefaults()
	role := "nimbus-" + strconv.Itoa(len(f.Nimbuses))
	dir := filepath.Join(f.Dir, role)
	etcd := f.EtcdURL()
	p := f.startRetrying(t, role, dir, h, 1, func(ports []int) []string {
		return append([]string{"nimbus", "--dir", dir, "--host", h.Addr, "--port", strconv.Itoa(ports[0]), "--etcd", etcd}, f.fileArgs()...)
	}, devcluster.NimbusReady)
	p.Addr = p.ready
	p.ID = devcluster.NimbusReadyID(p.readyLine)
	f.Nimbuses = append(f.Nimbuses, p)
	return p
}

// StartSupervisor starts a supervisor with the fleet's slots per
// supervisor on free ports, bound to h's address, and waits until it
// has joined the cluster.
func (f *Fleet) StartSupervisor(t testing.TB, h Host) *Proc {
	t.Helper()
	h = h.withDefaults()
	role := "supervisor-" + strconv.Itoa(len(f.Supervisors))
	dir := filepath.Join(f.Dir, role)
	etcd := f.EtcdURL()
	p := f.startRetrying(t, role, dir, h, f.slotsPer, func(ports []int) []string {
		return append([]string{"supervisor", "--dir", dir, "--host", h.Addr, "--ports", devcluster.JoinInts(ports, ","), "--etcd", etcd}, f.fileArgs()...)
	}, devcluster.SupervisorReady)
	p.ID = p.ready
	f.Supervisors = append(f.Supervisors, p)
	return p
}

func (f *Fleet) fileArgs() []string {
	if f.config == "" {
		return nil
	}
	return []string{"--file", f.config}
}

// startRetrying starts a process on n consecutive free ports, again on
// other ports if one was taken meanwhile.
func (f *Fleet) startRetrying(t testing.TB, role, dir string, h Host, n int, args func([]int) []string, ok func(string) (string, bool)) *Proc {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for attempt := 1; ; attempt++ {
		base, err := freePorts(1, n)
		if err != nil {
			t.Fatal(err)
		}
		ports := make([]int, n)
		for i := range ports {
			ports[i] = base[0] + i
		}
		p := &Proc{Role: role, Dir: dir, Ports: ports, host: h, args: args(ports), ok: ok, out: &syncBuffer{}}
		err = p.start()
		if err == nil {
			return p
		}
		if !errors.Is(err, errPortTaken) || attempt == startAttempts {
			t.Fatalf("clustertest: %v\n%s output:\n%s", err, role, p.Output())
		}
		t.Logf("clustertest: %s attempt %d: %v; again with other ports", role, attempt, err)
	}
}

// WaitSupervisors waits until a nimbus leads and lists n supervisors.
func (f *Fleet) WaitSupervisors(t testing.TB, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	var last string
	if err := Poll(ctx, func() bool {
		info, err := f.ClusterInfo(ctx)
		if err != nil {
			last = err.Error()
			return false
		}
		last = fmt.Sprintf("leader %q, %d supervisors", info.LeaderAddr, len(info.Supervisors))
		return info.LeaderAddr != "" && len(info.Supervisors) == n
	}); err != nil {
		t.Fatalf("clustertest: no nimbus led with %d supervisors within %s (last: %s)", n, readyTimeout, last)
	}
}

// ClusterInfo asks the running nimbuses in turn for the cluster's info
// and returns the first answer, or the last error.
func (f *Fleet) ClusterInfo(ctx context.Context) (*nimbuspb.ClusterInfoResponse, error) {
	var last error = errors.New("clustertest: no nimbus runs")
	for _, p := range f.Nimbuses {
		if !p.Running() {
			continue
		}
		info, err := nimbusCall(ctx, p.Addr, func(ctx context.Context, c nimbuspb.NimbusClient) (*nimbuspb.ClusterInfoResponse, error) {
			return c.ClusterInfo(ctx, &nimbuspb.ClusterInfoRequest{})
		})
		if err == nil {
			return info, nil
		}
		last = fmt.Errorf("%s at %s: %w", p.Role, p.Addr, err)
	}
	return nil, last
}

// Leader returns the nimbus that leads, as a running nimbus sees it; an
// error if none answers or none leads.
func (f *Fleet) Leader(ctx context.Context) (*Proc, error) {
	info, err := f.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	if info.LeaderAddr == "" {
		return nil, errors.New("clustertest: no nimbus leads")
	}
	for _, p := range f.Nimbuses {
		if p.Addr == info.LeaderAddr {
			return p, nil
		}
	}
	return nil, fmt.Errorf("clustertest: the leader %s (%s) is none of the fleet's nimbuses", info.LeaderAddr, info.LeaderId)
}

// Get asks the leader for topology name: its assignment and its
// workers' latest reports (only the leader has those).
func (f *Fleet) Get(ctx context.Context, name string) (*nimbuspb.TopologyInfo, error) {
	l, err := f.Leader(ctx)
	if err != nil {
		return nil, err
	}
	return nimbusCall(ctx, l.Addr, func(ctx context.Context, c nimbuspb.NimbusClient) (*nimbuspb.TopologyInfo, error) {
		return c.Get(ctx, &nimbuspb.GetRequest{Name: name})
	})
}

// nimbusCall dials addr and makes one call, within 10 s.
func nimbusCall[T any](ctx context.Context, addr string, call func(context.Context, nimbuspb.NimbusClient) (T, error)) (T, error) {
	var zero T
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return zero, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return call(ctx, nimbuspb.NewNimbusClient(conn))
}

// Seeds is the nimbuses' addresses, for a gale.yaml's nimbus.seeds.
func (f *Fleet) Seeds() []string {
	out := make([]string, len(f.Nimbuses))
	for i, p := range f.Nimbuses {
		out[i] = p.Addr
	}
	return out
}

// clientFile writes a gale.yaml for the commands that talk to nimbus:
// the fleet's config with nimbus.seeds naming every nimbus.
func (f *Fleet) clientFile() (string, error) {
	var b strings.Builder
	if f.config != "" {
		c, err := os.ReadFile(f.config)
		if err != nil {
			return "", err
		}
		for l := range strings.Lines(string(c)) {
			if !strings.HasPrefix(l, "nimbus.seeds:") {
				b.WriteString(l)
			}
		}
		if !strings.HasSuffix(b.String(), "\n") && b.Len() > 0 {
			b.WriteString("\n")
		}
	}
	seeds, _ := json.Marshal(f.Seeds())
	fmt.Fprintf(&b, "nimbus.seeds: %s\n", seeds)
	// Renamed into place: a command running meanwhile reads the old
	// file or the new, never a part.
	tmp, err := os.CreateTemp(f.Dir, ".client-*.yaml")
	if err != nil {
		return "", err
	}
	_, err = tmp.WriteString(b.String())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	p := filepath.Join(f.Dir, "client.yaml")
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return p, nil
}

// Gale runs the gale binary with args and --file naming a gale.yaml
// whose nimbus.seeds are the fleet's nimbuses (the client finds the
// leader among them), as Cluster.Gale does.
func (f *Fleet) Gale(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	file, err := f.clientFile()
	if err != nil {
		t.Fatal(err)
	}
	return runGale(t, append(args, "--file", file)...)
}

// GaleQuiet is Gale that logs the run only if it fails: for polls.
func (f *Fleet) GaleQuiet(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	file, err := f.clientFile()
	if err != nil {
		t.Fatal(err)
	}
	return runGaleLogged(t, false, append(args, "--file", file)...)
}

// List runs `gale list --json` against the fleet; a failure fails the
// test.
func (f *Fleet) List(t testing.TB) []Topology {
	t.Helper()
	ts, err := f.TryList(t)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// TryList is List that returns the failure, for polls that ride it out.
func (f *Fleet) TryList(t testing.TB) ([]Topology, error) {
	t.Helper()
	code, out, errOut := f.GaleQuiet(t, "list", "--json")
	if code != 0 {
		return nil, fmt.Errorf("gale list: exit %d: %s", code, strings.TrimSpace(errOut))
	}
	return decodeList(out)
}

// Store is a coord.Store on the fleet's etcd, for reading the records
// (assignments, supervisors) directly; closed at the end of the test.
func (f *Fleet) Store(t testing.TB) *coord.Store {
	t.Helper()
	f.storeOnce.Do(func() {
		c, err := coord.DialSecure([]string{f.EtcdURL()}, f.EtcdSecurity())
		if err != nil {
			f.storeErr = err
			return
		}
		f.client, f.store = c, coord.NewStore(c)
	})
	if f.storeErr != nil {
		t.Fatal(f.storeErr)
	}
	return f.store
}

// EtcdSecurity is how a client reaches the fleet's etcd: the zero
// Security, or the fleet's CA and client certificate with
// Options.EtcdTLS.
func (f *Fleet) EtcdSecurity() coord.Security {
	if f.tls == nil {
		return coord.Security{}
	}
	return f.tls.client
}

// fleetTLS is the CA and the certificates of a fleet whose etcd is
// secured.
type fleetTLS struct {
	dir    string
	ca     *testutil.CA
	caFile string
	client coord.Security // the CA and the client certificate
}

func newFleetTLS(t testing.TB, dir string) *fleetTLS {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ft := &fleetTLS{dir: dir, ca: testutil.NewCA(t)}
	ft.caFile = ft.ca.WriteCA(t, dir)
	cert, key := ft.ca.Issue(t, "gale").Write(t, dir, "gale")
	ft.client = coord.Security{CAFile: ft.caFile, CertFile: cert, KeyFile: key}
	return ft
}

// config is the gale.yaml lines that point Gale's processes at the CA
// and the client certificate.
func (ft *fleetTLS) config() string {
	return fmt.Sprintf("\n%s: %s\n%s: %s\n%s: %s\n", config.GaleEtcdTLSCA, ft.caFile,
		config.GaleEtcdTLSCert, ft.client.CertFile, config.GaleEtcdTLSKey, ft.client.KeyFile)
}

// serverArgs are gale etcd's flags to serve TLS on addr and accept only
// clients with a certificate of the CA.
func (ft *fleetTLS) serverArgs(t testing.TB, addr string) []string {
	t.Helper()
	cert, key := ft.ca.Issue(t, "etcd", addr, "127.0.0.1", "localhost").Write(t, ft.dir, "etcd")
	return []string{"--cert-file", cert, "--key-file", key, "--trusted-ca-file", ft.caFile, "--client-cert-auth"}
}

// Assignment reads topology name's assignment from etcd.
func (f *Fleet) Assignment(ctx context.Context, t testing.TB, name string) (coord.Assignment, error) {
	t.Helper()
	s := f.Store(t)
	as, err := s.Assignments(ctx)
	if err != nil {
		return coord.Assignment{}, err
	}
	for _, a := range as {
		if a.Name == name {
			return a, nil
		}
	}
	return coord.Assignment{}, fmt.Errorf("clustertest: no assignment of %q: %w", name, coord.ErrNotFound)
}

// SupervisorByID is the fleet's supervisor with id, nil if none.
func (f *Fleet) SupervisorByID(id string) *Proc {
	for _, p := range f.Supervisors {
		if p.ID == id {
			return p
		}
	}
	return nil
}

// Workers are the pids of the processes under the fleet's Dir other
// than its own (etcd, nimbuses, supervisors): the workers.
func (f *Fleet) Workers() ([]int, error) {
	return workersUnder(f.Dir, f.pids())
}

func (f *Fleet) procs() []*Proc {
	var ps []*Proc
	if f.Etcd != nil {
		ps = append(ps, f.Etcd)
	}
	ps = append(ps, f.Nimbuses...)
	return append(ps, f.Supervisors...)
}

// pids are the pids the fleet's processes have had.
func (f *Fleet) pids() []int {
	var out []int
	for _, p := range f.procs() {
		out = append(out, p.allPIDs()...)
	}
	return out
}

func workersUnder(dir string, ours []int) ([]int, error) {
	ps, err := procstat.Under(dir)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, p := range ps {
		if !slices.Contains(ours, p.PID) {
			out = append(out, p.PID)
		}
	}
	slices.Sort(out)
	return out, nil
}

// stop stops the supervisors, the workers, the nimbuses and etcd, in
// that order, with SIGTERM (SIGKILL after a grace), and reports a process
// that had exited on its own, one that did not stop on SIGTERM, and
// anything left running under Dir.
func (f *Fleet) stop() error {
	var errs []error
	for _, p := range f.procs() {
		if err := p.unexpectedExit(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, group := range [][]*Proc{f.Supervisors, nil, f.Nimbuses, {f.Etcd}} {
		if group == nil {
			if err := f.stopWorkers(); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, p := range group {
			if p == nil {
				continue
			}
			wg.Go(func() {
				if err := p.Stop(); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	if f.store != nil {
		f.store.Close()
		f.client.Close()
	}
	ps, _ := procstat.Under(f.Dir)
	var left []int
	for _, p := range ps {
		left = append(left, p.PID)
		syscall.Kill(p.PID, syscall.SIGKILL)
	}
	if len(left) > 0 {
		errs = append(errs, fmt.Errorf("processes of the fleet left running after it stopped (killed): %v", left))
	}
	return errors.Join(errs...)
}

// stopWorkers stops the workers with SIGTERM, and SIGKILL after the
// grace dev gives them.
func (f *Fleet) stopWorkers() error {
	ws, err := f.Workers()
	if err != nil || len(ws) == 0 {
		return err
	}
	for _, pid := range ws {
		syscall.Kill(pid, syscall.SIGTERM)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if Poll(ctx, func() bool { ws, err = f.Workers(); return err == nil && len(ws) == 0 }) == nil {
		return nil
	}
	for _, pid := range ws {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	return nil
}

// Proc is one process of a Fleet: etcd, a nimbus or a supervisor. It
// keeps its role, directory, ports and address across restarts. Its
// methods are safe for concurrent use.
type Proc struct {
	// Role names it: etcd, nimbus-0, supervisor-1, …
	Role string
	// Dir is its state directory (--dir).
	Dir string
	// Ports are its ports: etcd's client port, nimbus's API port, a
	// supervisor's slots.
	Ports []int
	// Addr is etcd's client URL or nimbus's host:port; "" for a
	// supervisor.
	Addr string
	// ID is a nimbus's or a supervisor's id, from its ready line.
	ID string

	host Host
	args []string
	ok   func(string) (string, bool)
	out  *syncBuffer // its output, every run's

	// ready and readyLine are what the first run's ready line gave.
	ready, readyLine string

	mu struct {
		sync.Mutex
		run      *devcluster.Watched // the latest run
		expected bool                // the test signalled it to end
		pids     []int
	}
}

// start runs the process once and waits for its ready line.
func (p *Proc) start() error {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := p.host.Command(ctx, Binary(), p.args...)
	// The test's process must not take a signal meant for the process.
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	fmt.Fprintf(p.out, "clustertest: %s %s\n", filepath.Base(Binary()), strings.Join(p.args, " "))
	run := &devcluster.Watched{
		Cmd:    cmd, // stdout and stderr both read
		Line:   func(l string) { fmt.Fprintf(p.out, "%s\n", l) },
		Ready:  func(l string) bool { _, ok := p.ok(l); return ok },
		Exited: cancel,
	}
	if err := run.Start(); err != nil {
		cancel()
		return fmt.Errorf("start %s: %w", p.Role, err)
	}
	p.mu.Lock()
	p.mu.run, p.mu.expected = run, false
	p.mu.pids = append(p.mu.pids, cmd.Process.Pid)
	p.mu.Unlock()
	tm := time.NewTimer(readyTimeout)
	defer tm.Stop()
	select {
	case l := <-run.ReadyLine():
		if p.readyLine == "" {
			p.readyLine = l
			p.ready, _ = p.ok(l)
		}
		return nil
	case <-run.Done():
		err := fmt.Errorf("%s exited before it was ready: %v", p.Role, p.exitErr())
		if strings.Contains(p.Output(), "address already in use") {
			err = fmt.Errorf("%w: %w", errPortTaken, err)
		}
		return err
	case <-tm.C:
		p.Kill()
		return fmt.Errorf("%s was not ready within %s", p.Role, readyTimeout)
	}
}

// latest is the process's latest run.
func (p *Proc) latest() *devcluster.Watched {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.run
}

// exitErr is how the latest run exited; call it once it has.
func (p *Proc) exitErr() error { return p.latest().Err() }

// PID is the pid of the process's latest run.
func (p *Proc) PID() int { return p.latest().PID() }

func (p *Proc) allPIDs() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.mu.pids)
}

// Exited is closed once the process's latest run has exited.
func (p *Proc) Exited() <-chan struct{} { return p.latest().Done() }

// Running says whether the latest run has not exited.
func (p *Proc) Running() bool { return p.latest().Running() }

// Output is everything the process wrote, every run's, with each run's
// command line before it.
func (p *Proc) Output() string { return p.out.String() }

// signal sends sig to the latest run, marked as the test's doing.
func (p *Proc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	cmd := p.mu.run.Cmd
	if sig == syscall.SIGKILL || sig == syscall.SIGTERM {
		p.mu.expected = true
	}
	p.mu.Unlock()
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("%s: signal %v: %w", p.Role, sig, err)
	}
	return nil
}

// Kill kills the process with SIGKILL (kill -9), alone, and waits until
// it has exited. A supervisor's workers keep running.
func (p *Proc) Kill() error {
	if err := p.signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-p.Exited()
	return nil
}

// Stop stops the process with SIGTERM and waits until it has exited;
// after 30 s it kills it, and says so. A process that had exited
// already is left as it is.
func (p *Proc) Stop() error {
	if !p.Running() {
		return nil
	}
	// A paused process would never see the SIGTERM.
	p.signal(syscall.SIGCONT)
	if err := p.signal(syscall.SIGTERM); err != nil {
		return err
	}
	tm := time.NewTimer(30 * time.Second)
	defer tm.Stop()
	select {
	case <-p.Exited():
	case <-tm.C:
		p.Kill()
		return fmt.Errorf("%s (pid %d) did not stop within 30 s of SIGTERM; killed", p.Role, p.PID())
	}
	if err := p.exitErr(); err != nil {
		return fmt.Errorf("%s (pid %d) stopped on SIGTERM with %v, want exit 0", p.Role, p.PID(), err)
	}
	return nil
}

// Pause stops the process with SIGSTOP: it runs no more, and its
// connections and ports stay open, until Resume.
func (p *Proc) Pause() error { return p.signal(syscall.SIGSTOP) }

// Resume continues a paused process (SIGCONT).
func (p *Proc) Resume() error { return p.signal(syscall.SIGCONT) }

// Restart starts the process again, with the same directory, ports and
// arguments, once the latest run has exited (Kill or Stop it first), and
// waits for its ready line. A failure fails the test.
func (p *Proc) Restart(t testing.TB) {
	t.Helper()
	select {
	case <-p.Exited():
	default:
		t.Fatalf("clustertest: Restart of %s (pid %d), which still runs: Kill or Stop it first", p.Role, p.PID())
	}
	if err := p.start(); err != nil {
		t.Fatalf("clustertest: restart %s: %v\noutput:\n%s", p.Role, err, p.Output())
	}
}

// unexpectedExit is an error if the latest run exited without the test
// asking.
func (p *Proc) unexpectedExit() error {
	if p.Running() {
		return nil
	}
	p.mu.Lock()
	run, expected := p.mu.run, p.mu.expected
	p.mu.Unlock()
	if expected {
		return nil
	}
	return fmt.Errorf("%s (pid %d) exited on its own: %v", p.Role, run.PID(), devcluster.ExitReason(run.Err()))
}

// Workers are the pids of a supervisor's workers: the processes under
// its Dir other than itself, in increasing order.
func (p *Proc) Workers() ([]int, error) {
	return workersUnder(p.Dir, p.allPIDs())
}

// SupervisorStatus is what `gale supervisor status --json` prints.
type SupervisorStatus struct {
	Supervisor string         `json:"supervisor"`
	Workers    []WorkerStatus `json:"workers"`
}

// WorkerStatus is a worker of a SupervisorStatus.
type WorkerStatus struct {
	Topology string `json:"topology"` // its id
	Port     int    `json:"port"`
	PID      int    `json:"pid"`
	State    string `json:"state"`
	Reason   string `json:"reason"`
	Emitted  int64  `json:"emitted"`
	Acked    int64  `json:"acked"`
	Failed   int64  `json:"failed"`
}

// SupervisorStatus runs `gale supervisor status --json` for a
// supervisor: its workers and their counts, from the supervisor itself
// (neither etcd nor nimbus is asked).
func (p *Proc) SupervisorStatus(ctx context.Context) (SupervisorStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, Binary(), "supervisor", "status", "--dir", p.Dir, "--json")
	var errOut strings.Builder
	cmd.Stderr = &errOut
	var st SupervisorStatus
	out, err := cmd.Output()
	if err != nil {
		return st, fmt.Errorf("gale supervisor status --dir %s: %v: %s", p.Dir, err, strings.TrimSpace(errOut.String()))
	}
	if err := json.Unmarshal(out, &st); err != nil {
		return st, fmt.Errorf("gale supervisor status --json: %v\n%s", err, out)
	}
	return st, nil
}
