package cli

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/gale-stream/gale/internal/cli/clitest"
	"github.com/gale-stream/gale/internal/nimbuspb"
	"github.com/gale-stream/gale/internal/testutil"
	"github.com/gale-stream/gale/internal/transport"
)

// fakeNimbus is a nimbus API server that records what it is sent. By
// default it is the leader; with standby set, it names another as the
// leader and refuses mutating calls as a standby nimbus does.
type fakeNimbus struct {
	nimbuspb.UnimplementedNimbusServer
	addr string

	mu         sync.Mutex
	leader     string // what ClusterInfo answers; "" means this one
	standby    bool
	onMutate   func() // called before a mutating call is answered
	submits    []submitted
	kills      []*nimbuspb.KillRequest
	activates  []string
	deactivate []string
	rebalances []*nimbuspb.RebalanceRequest
	auth       []string // the authorization metadata of each mutating call
	topologies []*nimbuspb.TopologySummary
}

// submitted is one submission the fake received.
type submitted struct {
	header   *nimbuspb.SubmitHeader
	sha256   string // of the bytes received
	size     int64
	maxChunk int
}

// startFakeNimbus serves a fakeNimbus on a free port of 127.0.0.1 until
// the end of the test; with cert it serves TLS.
func startFakeNimbus(t *testing.T, cert *tls.Certificate) *fakeNimbus {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var opts []grpc.ServerOption
	if cert != nil {
		opts = append(opts, grpc.Creds(credentials.NewServerTLSFromCert(cert)))
	}
	f := &fakeNimbus{addr: ln.Addr().String()}
	srv := grpc.NewServer(opts...)
	nimbuspb.RegisterNimbusServer(srv, f)
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
	return f
}

func (f *fakeNimbus) setLeader(addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leader = addr
}

func (f *fakeNimbus) ClusterInfo(context.Context, *nimbuspb.ClusterInfoRequest) (*nimbuspb.ClusterInfoResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	leader := f.leader
	if leader == "" {
		leader = f.addr
	}
	return &nimbuspb.ClusterInfoResponse{LeaderId: "n-" + leader, LeaderAddr: leader}, nil
}

// mutating records the call's token and answers as a standby would.
func (f *fakeNimbus) mutating(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	md, _ := metadata.FromIncomingContext(ctx)
	f.auth = append(f.auth, strings.Join(md.Get("authorization"), ","))
	if f.onMutate != nil {
		f.onMutate()
	}
	if f.standby {
		return status.Errorf(codes.FailedPrecondition, "nimbus %s is a standby; the leader is %s", f.addr, f.leader)
	}
	return nil
}

func (f *fakeNimbus) Submit(s grpc.ClientStreamingServer[nimbuspb.SubmitRequest, nimbuspb.SubmitResponse]) error {
	if err := f.mutating(s.Context()); err != nil {
		return err
	}
	first, err := s.Recv()
	if err != nil {
		return err
	}
	h := first.GetHeader()
	if h == nil {
		return status.Error(codes.InvalidArgument, "the first message must be the header")
	}
	sum := sha256.New()
	sub := submitted{header: h}
	for {
		m, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		c := m.GetChunk()
		sum.Write(c)
		sub.size += int64(len(c))
		sub.maxChunk = max(sub.maxChunk, len(c))
	}
	sub.sha256 = hex.EncodeToString(sum.Sum(nil))
	f.mu.Lock()
	f.submits = append(f.submits, sub)
	f.mu.Unlock()
	return s.SendAndClose(&nimbuspb.SubmitResponse{Id: h.Name + "-1", Status: "ACTIVE"})
}

func (f *fakeNimbus) List(context.Context, *nimbuspb.ListRequest) (*nimbuspb.ListResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &nimbuspb.ListResponse{Topologies: f.topologies}, nil
}

func (f *fakeNimbus) Kill(ctx context.Context, r *nimbuspb.KillRequest) (*nimbuspb.KillResponse, error) {
	if err := f.mutating(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Name != "wordcount" {
		return nil, status.Errorf(codes.NotFound, "no topology %q is running", r.Name)
	}
	f.kills = append(f.kills, r)
	return &nimbuspb.KillResponse{}, nil
}

func (f *fakeNimbus) Activate(ctx context.Context, r *nimbuspb.ActivateRequest) (*nimbuspb.ActivateResponse, error) {
	if err := f.mutating(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.activates = append(f.activates, r.Name)
	return &nimbuspb.ActivateResponse{}, nil
}

func (f *fakeNimbus) Deactivate(ctx context.Context, r *nimbuspb.DeactivateRequest) (*nimbuspb.DeactivateResponse, error) {
	if err := f.mutating(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deactivate = append(f.deactivate, r.Name)
	return &nimbuspb.DeactivateResponse{}, nil
}

func (f *fakeNimbus) Rebalance(ctx context.Context, r *nimbuspb.RebalanceRequest) (*nimbuspb.RebalanceResponse, error) {
	if err := f.mutating(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rebalances = append(f.rebalances, r)
	return &nimbuspb.RebalanceResponse{}, nil
}

func (f *fakeNimbus) received() []submitted {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.submits)
}

// writeFile writes a file under the test's directory and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSubmitSendsDefinition: submit sends the topology as planned with
// its parameters and config (a user key's too), and this very binary as the artifact, in
// chunks of at most 64 KiB.
func TestSubmitSendsDefinition(t *testing.T) {
	t.Parallel()
	fake := startFakeNimbus(t, nil)
	code, stdout, _ := runGale(t, "submit", "wordcount", "--nimbus", fake.addr, "--json",
		"-p", "splitters=3", "-c", "topology.message.timeout.secs=7", "-c", "topology.debug=true",
		"-c", "topology.component.panic.policy=kill-worker", "-c", "starter.top.n=5", "--workers", "2")
	if code != exitOK {
		t.Fatalf("exit code: got %d, want %d", code, exitOK)
	}
	var r submitResult
	clitest.DecodeOne(t, stdout, &r)
	if r.ID != "wordcount-1" || r.Status != "ACTIVE" || r.Nimbus != fake.addr {
		t.Errorf("result: got %+v, want id wordcount-1, ACTIVE, nimbus %s", r, fake.addr)
	}
	subs := fake.received()
	if len(subs) != 1 {
		t.Fatalf("nimbus got %d submissions, want 1", len(subs))
	}
	s := subs[0]
	h := s.header
	d := h.Definition
	if h.Name != "wordcount" || d.Factory != "wordcount" || d.Workers != 2 {
		t.Errorf("name %q, factory %q, workers %d: want wordcount, wordcount, 2", h.Name, d.Factory, d.Workers)
	}
	if d.Params["splitters"] != "3" || len(d.Params) != 1 {
		t.Errorf("params: got %v, want splitters=3", d.Params)
	}
	type comp struct {
		id     string
		spout  bool
		par    int32
		inputs string
	}
	var got []comp
	for _, c := range d.Components {
		var in []string
		for _, i := range c.Inputs {
			in = append(in, i.Component+"/"+i.Stream)
		}
		got = append(got, comp{c.Id, c.Spout, c.Parallelism, strings.Join(in, ",")})
	}
	want := []comp{{"count", false, 2, "split/default"}, {"sentences", true, 1, ""}, {"split", false, 3, "sentences/default"}}
	slices.SortFunc(got, func(a, b comp) int { return strings.Compare(a.id, b.id) })
	if !slices.Equal(got, want) {
		t.Errorf("components: got %+v, want %+v", got, want)
	}
	var conf map[string]any
	if err := json.Unmarshal(h.ConfigJson, &conf); err != nil {
		t.Fatalf("config_json: %v", err)
	}
	for k, v := range map[string]any{"topology.message.timeout.secs": 7.0, "topology.debug": true, "topology.workers": 2.0,
		"topology.component.panic.policy": "kill-worker", "starter.top.n": 5.0} {
		if conf[k] != v {
			t.Errorf("config_json %s: got %#v, want %#v", k, conf[k], v)
		}
	}

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	a := h.Artifact
	if a.Sha256 != hex.EncodeToString(sum[:]) || a.Size != int64(len(b)) {
		t.Errorf("artifact header: sha256 %s size %d, want this binary's %x size %d", a.Sha256, a.Size, sum, len(b))
	}
	if s.sha256 != a.Sha256 || s.size != a.Size {
		t.Errorf("bytes sent: sha256 %s size %d, want the header's %s size %d", s.sha256, s.size, a.Sha256, a.Size)
	}
	if s.maxChunk > artifactChunk {
		t.Errorf("largest chunk: %d bytes, want ≤ %d", s.maxChunk, artifactChunk)
	}
	if a.Goos != runtime.GOOS || a.Goarch != runtime.GOARCH || a.WireVersion != transport.ProtocolVersion || a.GaleVersion == "" {
		t.Errorf("artifact: %s/%s wire %d gale %q, want %s/%s wire %d and a version",
			a.Goos, a.Goarch, a.WireVersion, a.GaleVersion, runtime.GOOS, runtime.GOARCH, transport.ProtocolVersion)
	}
}

// TestSubmitExample: the stock binary's `submit --example NAME` is
// `submit NAME`.
func TestSubmitExample(t *testing.T) {
	t.Parallel()
	fake := startFakeNimbus(t, nil)
	code, stdout, _ := runGale(t, "submit", "--example", "wordcount", "--nimbus", fake.addr)
	if code != exitOK {
		t.Fatalf("exit code: got %d, want %d", code, exitOK)
	}
	if !strings.Contains(stdout, "submitted wordcount") || !strings.Contains(stdout, "ACTIVE") {
		t.Errorf("stdout: got %q, want the submission and its status", stdout)
	}
	if subs := fake.received(); len(subs) != 1 || subs[0].header.Definition.Workers != 1 {
		t.Errorf("submissions: got %d, want 1 with topology.workers' default of 1", len(subs))
	}
}

// TestSubmitRejectsBeforeSending: a bad command line or config is an
// error naming it, and nimbus hears nothing.
func TestSubmitRejectsBeforeSending(t *testing.T) {
	t.Parallel()
	fake := startFakeNimbus(t, nil)
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr []string
	}{
		{"no name", nil, exitUsage, []string{"needs the name of a topology", "wordcount"}},
		{"unknown topology", []string{"wordcont"}, exitUsage, []string{`unknown topology "wordcont"`}},
		{"two names", []string{"wordcount", "stuck"}, exitUsage, []string{"one topology name"}},
		{"name and another example", []string{"wordcount", "--example", "stuck"}, exitUsage, []string{"--example"}},
		{"setting without value", []string{"wordcount", "-c", "topology.debug"}, exitUsage, []string{"-c wants KEY=VALUE"}},
		{"cluster key", []string{"wordcount", "-c", "nimbus.seeds=h1"}, exitUsage, []string{"nimbus.seeds", "topology.* keys and user keys only"}},
		{"unknown key", []string{"wordcount", "-c", "topology.wrokers=2"}, exitUsage, []string{"topology.wrokers"}},
		{"bad value", []string{"wordcount", "-c", "topology.workers=0"}, exitUsage, []string{"topology.workers", "≥ 1"}},
		{"wrong type", []string{"wordcount", "-c", "topology.debug=maybe"}, exitUsage, []string{"topology.debug"}},
		{"key twice", []string{"wordcount", "-c", "topology.debug=true", "-c", "topology.debug=false"}, exitUsage, []string{"twice"}},
		{"bad workers", []string{"wordcount", "--workers", "0"}, exitUsage, []string{"--workers"}},
		{"bad param", []string{"wordcount", "-p", "splitters"}, exitUsage, []string{"--param wants KEY=VALUE"}},
		{"every mistake at once", []string{"wordcount", "-c", "ui.port=1", "-p", "=2", "--workers", "-1"}, exitUsage,
			[]string{"-c ui.port", "--param", "--workers"}},
		{"Storm key Gale refuses", []string{"wordcount", "-c", "topology.kryo.factory=x"}, exitUsage, []string{"topology.kryo.factory", "not supported by Gale"}},
		{"param the topology rejects", []string{"wordcount", "-p", "spliters=2"}, exitRuntime, []string{`"spliters"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, _, stderr := runGale(t, append([]string{"submit", "--nimbus", fake.addr}, tt.args...)...)
			if code != tt.code {
				t.Errorf("exit code: got %d, want %d", code, tt.code)
			}
			for _, w := range tt.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not contain %q", w)
				}
			}
		})
	}
	t.Cleanup(func() {
		if n := len(fake.received()); n != 0 {
			t.Errorf("nimbus got %d submissions, want none", n)
		}
	})
}

// TestClientFindsLeader: a seed that is a standby names the leader, and
// the client calls the leader.
func TestClientFindsLeader(t *testing.T) {
	t.Parallel()
	leader := startFakeNimbus(t, nil)
	standby := startFakeNimbus(t, nil)
	standby.mu.Lock()
	standby.leader, standby.standby = leader.addr, true
	standby.mu.Unlock()
	// The first seed does not answer; the second is the standby.
	conf := writeFile(t, "gale.yaml", "nimbus.seeds: [\"127.0.0.1:"+strconv.Itoa(clitest.ClosedPort(t))+"\", \""+standby.addr+"\"]\n")
	code, _, _ := runGale(t, "submit", "wordcount", "--file", conf)
	if code != exitOK {
		t.Fatalf("exit code: got %d, want %d", code, exitOK)
	}
	if n, m := len(leader.received()), len(standby.received()); n != 1 || m != 0 {
		t.Errorf("submissions: leader got %d, standby %d; want 1 and 0", n, m)
	}
}

// TestClientRefindsStaleLeader: a leader that has become a standby
// between ClusterInfo and the call answers FailedPrecondition; the client
// finds the new leader and calls it.
func TestClientRefindsStaleLeader(t *testing.T) {
	t.Parallel()
	seed := startFakeNimbus(t, nil)
	stale := startFakeNimbus(t, nil)
	fresh := startFakeNimbus(t, nil)
	seed.mu.Lock()
	seed.leader, seed.standby = stale.addr, true
	seed.mu.Unlock()
	stale.mu.Lock()
	stale.leader, stale.standby = fresh.addr, true
	stale.onMutate = func() { seed.setLeader(fresh.addr) }
	stale.mu.Unlock()
	code, _, _ := runGale(t, "kill", "wordcount", "--nimbus", seed.addr)
	if code != exitOK {
		t.Fatalf("exit code: got %d, want %d", code, exitOK)
	}
	fresh.mu.Lock()
	defer fresh.mu.Unlock()
	if len(fresh.kills) != 1 {
		t.Errorf("the new leader got %d kills, want 1", len(fresh.kills))
	}
}

// TestClientStandbyOnly: when the leader named stays a standby, the
// client does not loop: it reports the nimbus's answer.
func TestClientStandbyOnly(t *testing.T) {
	t.Parallel()
	a := startFakeNimbus(t, nil)
	a.mu.Lock()
	a.leader, a.standby = a.addr, true // confused: names itself
	a.mu.Unlock()
	code, _, stderr := runGale(t, "activate", "wordcount", "--nimbus", a.addr)
	if code != exitRuntime || !strings.Contains(stderr, "is a standby") {
		t.Errorf("exit %d, stderr %q: want 1 and the standby's answer", code, stderr)
	}
}

// TestClientUnreachableSeeds: no seed answers: one error names every
// address tried and what to check.
func TestClientUnreachableSeeds(t *testing.T) {
	t.Parallel()
	p1, p2 := clitest.ClosedPort(t), clitest.ClosedPort(t)
	conf := writeFile(t, "gale.yaml", "nimbus.seeds: [\"127.0.0.1:"+strconv.Itoa(p1)+"\", \"localhost\"]\nnimbus.thrift.port: "+strconv.Itoa(p2)+"\n")
	code, _, stderr := runGale(t, "list", "--file", conf)
	if code != exitRuntime {
		t.Errorf("exit code: got %d, want %d", code, exitRuntime)
	}
	for _, w := range []string{"127.0.0.1:" + strconv.Itoa(p1), "localhost:" + strconv.Itoa(p2), "check that nimbus runs", "nimbus.seeds"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr does not contain %q", w)
		}
	}
}

// TestClientBearerToken: nimbus.auth.token, or the token file, goes with
// every mutating call.
func TestClientBearerToken(t *testing.T) {
	t.Parallel()
	tokenFile := writeFile(t, "token", "  f1le-t0ken\n")
	for _, tt := range []struct{ name, yaml, want string }{
		{"token", "nimbus.auth.token: s3cret\n", "Bearer s3cret"},
		{"token file", "nimbus.auth.token.file: " + tokenFile + "\n", "Bearer f1le-t0ken"},
		{"none", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := startFakeNimbus(t, nil)
			conf := writeFile(t, "gale.yaml", "nimbus.seeds: [\""+fake.addr+"\"]\n"+tt.yaml)
			if code, _, _ := runGale(t, "deactivate", "wordcount", "--file", conf); code != exitOK {
				t.Fatalf("exit code: got %d, want %d", code, exitOK)
			}
			fake.mu.Lock()
			defer fake.mu.Unlock()
			if !slices.Equal(fake.auth, []string{tt.want}) || !slices.Equal(fake.deactivate, []string{"wordcount"}) {
				t.Errorf("authorization: got %q on %v, want %q on one deactivate", fake.auth, fake.deactivate, tt.want)
			}
		})
	}
	t.Run("empty token file", func(t *testing.T) {
		t.Parallel()
		conf := writeFile(t, "gale.yaml", "nimbus.auth.token.file: "+writeFile(t, "empty", "\n")+"\n")
		code, _, stderr := runGale(t, "list", "--file", conf)
		if code != exitRuntime || !strings.Contains(stderr, "is empty") {
			t.Errorf("exit %d, stderr %q: want 1 and the empty file named", code, stderr)
		}
	})
}

// TestClientTLS: with nimbus.tls.cert the client speaks TLS and trusts
// that certificate; without it, it cannot talk to a TLS nimbus.
func TestClientTLS(t *testing.T) {
	t.Parallel()
	c := testutil.NewCert(t)
	cert, certPEM := c.TLS, string(c.CertPEM)
	fake := startFakeNimbus(t, &cert)
	fake.mu.Lock()
	fake.topologies = []*nimbuspb.TopologySummary{{Name: "wordcount", Id: "wordcount-1", Status: "ACTIVE"}}
	fake.mu.Unlock()
	conf := writeFile(t, "gale.yaml", "nimbus.tls.cert: "+writeFile(t, "cert.pem", certPEM)+"\n")
	code, stdout, _ := runGale(t, "list", "--file", conf, "--nimbus", fake.addr)
	if code != exitOK || !strings.Contains(stdout, "wordcount-1") {
		t.Errorf("with the certificate: exit %d, stdout %q; want 0 and the topology", code, stdout)
	}
	if code, _, _ := runGale(t, "list", "--nimbus", fake.addr); code != exitRuntime {
		t.Errorf("without the certificate: exit %d, want %d", code, exitRuntime)
	}
}

// TestList: list shows every topology with its counters, its workers
// running of those asked for, and why one is pending.
func TestList(t *testing.T) {
	t.Parallel()
	fake := startFakeNimbus(t, nil)
	fake.mu.Lock()
	fake.topologies = []*nimbuspb.TopologySummary{
		{Name: "wordcount", Id: "wordcount-1", Status: "ACTIVE", Workers: 2, WorkersRunning: 2, Executors: 7, Tasks: 7, UptimeSecs: 3725, Emitted: 100, Acked: 90, Failed: 3},
		{Name: "big", Id: "big-2", Status: "ACTIVE", PendingReason: "needs 9 slots, 3 are free", Workers: 9},
	}
	fake.mu.Unlock()
	code, stdout, _ := runGale(t, "list", "--nimbus", fake.addr, "--json")
	if code != exitOK {
		t.Fatalf("exit code: got %d, want %d", code, exitOK)
	}
	var r ListReport
	clitest.DecodeOne(t, stdout, &r)
	want := []listedTopology{
		{Name: "wordcount", ID: "wordcount-1", Status: "ACTIVE", Workers: 2, WorkersRunning: 2, Executors: 7, Tasks: 7, UptimeSecs: 3725, Emitted: 100, Acked: 90, Failed: 3},
		{Name: "big", ID: "big-2", Status: "ACTIVE", PendingReason: "needs 9 slots, 3 are free", Workers: 9},
	}
	if !slices.Equal(r.Topologies, want) {
		t.Errorf("topologies: got %+v, want %+v", r.Topologies, want)
	}
	code, stdout, _ = runGale(t, "list", "--nimbus", fake.addr)
	if code != exitOK {
		t.Fatalf("exit code: got %d, want %d", code, exitOK)
	}
	for _, w := range []string{"wordcount-1", "2/2", "0/9", "1h 2m 5s", "big is pending: needs 9 slots, 3 are free"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("stdout does not contain %q:\n%s", w, stdout)
		}
	}

	empty := startFakeNimbus(t, nil)
	code, stdout, _ = runGale(t, "list", "--nimbus", empty.addr, "--json")
	if code != exitOK || !strings.Contains(stdout, `"topologies": []`) {
		t.Errorf("empty cluster: exit %d, stdout %q: want 0 and an empty list", code, stdout)
	}
}

// TestAdminCommands: kill, activate, deactivate and rebalance send what
// their flags say, -w defaulting to the topology's message timeout (-1).
func TestAdminCommands(t *testing.T) {
	t.Parallel()
	fake := startFakeNimbus(t, nil)
	for _, args := range [][]string{
		{"kill", "wordcount"},
		{"kill", "wordcount", "-w", "1", "--json"},
		{"activate", "wordcount"},
		{"deactivate", "wordcount", "--json"},
		{"rebalance", "wordcount"},
		{"rebalance", "wordcount", "-w", "0", "-n", "3", "-e", "split=4", "-e", "count=2"},
	} {
		if code, _, _ := runGale(t, append(args, "--nimbus", fake.addr)...); code != exitOK {
			t.Errorf("%v: exit code %d, want %d", args, code, exitOK)
		}
	}
	fake.mu.Lock()
	if len(fake.kills) != 2 || fake.kills[0].WaitSecs != -1 || fake.kills[1].WaitSecs != 1 {
		t.Errorf("kills: got %v, want wait -1 then 1", fake.kills)
	}
	if !slices.Equal(fake.activates, []string{"wordcount"}) || !slices.Equal(fake.deactivate, []string{"wordcount"}) {
		t.Errorf("activates %v, deactivates %v: want one of each", fake.activates, fake.deactivate)
	}
	if len(fake.rebalances) != 2 {
		t.Fatalf("rebalances: got %d, want 2", len(fake.rebalances))
	}
	r0, r1 := fake.rebalances[0], fake.rebalances[1]
	if r0.WaitSecs != -1 || r0.NumWorkers != 0 || len(r0.Executors) != 0 {
		t.Errorf("plain rebalance: got %v, want wait -1, workers and executors unchanged", r0)
	}
	if r1.WaitSecs != 0 || r1.NumWorkers != 3 || r1.Executors["split"] != 4 || r1.Executors["count"] != 2 || len(r1.Executors) != 2 {
		t.Errorf("rebalance -w 0 -n 3 -e split=4 -e count=2: got %v", r1)
	}
	fake.mu.Unlock()

	code, stdout, _ := runGale(t, "kill", "wordcount", "-w", "5", "--json", "--nimbus", fake.addr)
	var r adminResult
	clitest.DecodeOne(t, stdout, &r)
	if code != exitOK || r.Action != "kill" || r.Name != "wordcount" || r.WaitSecs == nil || *r.WaitSecs != 5 {
		t.Errorf("kill --json: exit %d, %+v", code, r)
	}

	for _, tt := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"kill"}, exitUsage, "one topology"},
		{[]string{"kill", "a", "b"}, exitUsage, "one topology"},
		{[]string{"kill", "wordcount", "-w", "-2"}, exitUsage, "-w must be ≥ 0"},
		{[]string{"rebalance", "wordcount", "-n", "0"}, exitUsage, "-n must be ≥ 1"},
		{[]string{"rebalance", "wordcount", "-e", "split=0"}, exitUsage, "-e split"},
		{[]string{"rebalance", "wordcount", "-e", "split"}, exitUsage, "COMPONENT=N"},
		{[]string{"kill", "nosuch"}, exitRuntime, `no topology "nosuch"`},
	} {
		code, _, stderr := runGale(t, append(tt.args, "--nimbus", fake.addr)...)
		if code != tt.code || !strings.Contains(stderr, tt.stderr) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tt.args, code, stderr, tt.code, tt.stderr)
		}
	}
}

// TestListReadsFromAStandbyWhileTheLeaderIsDead: the leader the
// standby names does not answer (killed, its lease not expired yet):
// gale list answers from the standby, and says which nimbus answered.
func TestListReadsFromAStandbyWhileTheLeaderIsDead(t *testing.T) {
	t.Parallel()
	standby := startFakeNimbus(t, nil)
	dead := "127.0.0.1:" + strconv.Itoa(clitest.ClosedPort(t))
	standby.mu.Lock()
	standby.leader, standby.standby = dead, true
	standby.topologies = []*nimbuspb.TopologySummary{{Id: "wc-1", Name: "wc", Status: "ACTIVE", Workers: 2, WorkersRunning: 2, Acked: 1000}}
	standby.mu.Unlock()
	code, out, _ := runGale(t, "list", "--json", "--nimbus", standby.addr)
	if code != exitOK {
		t.Fatalf("gale list with the leader dead: exit %d, want %d", code, exitOK)
	}
	var r ListReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Nimbus != standby.addr || len(r.Topologies) != 1 || r.Topologies[0].Acked != 1000 || r.Topologies[0].WorkersRunning != 2 {
		t.Errorf("gale list with the leader dead: %+v, want wc with 2 running and 1000 acked, from %s", r, standby.addr)
	}
	// A write still goes to the leader, and says it cannot be reached.
	code, _, errOut := runGale(t, "kill", "wc", "--nimbus", standby.addr)
	if code == exitOK || !strings.Contains(errOut, dead) {
		t.Errorf("gale kill with the leader dead: exit %d, %q; want a failure naming %s", code, errOut, dead)
	}
}
