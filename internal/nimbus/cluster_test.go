package nimbus

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/nimbuspb"
	"github.com/gale-stream/gale/internal/testutil"
)

// A lost supervisor's workers move; the others stay where they are.
func TestLostSupervisorMovesOnlyItsWorkers(t *testing.T) {
	cl := newCluster(t)
	cl.supervisor("s1", 6700, 6701)
	s2 := cl.supervisor("s2", 6700, 6701)
	nd := cl.startNimbus("n1", "", nil)
	nd.leads()
	id := nd.mustSubmit(newSubmission("wc", 2, 1)).GetId()
	before, _ := cl.assignment(id)
	var kept int
	for i, w := range before.Workers {
		if w.Supervisor == "s1" {
			kept = i
		}
	}
	if !slices.ContainsFunc(before.Workers, func(w coord.Slot) bool { return w.Supervisor == "s2" }) {
		t.Fatalf("the two workers are not spread over both supervisors: %s", describe(before))
	}
	s2.Close()
	var after coord.Assignment
	testutil.Eventually(t, 30*time.Second, "the lost supervisor's worker moves", func() bool {
		after, _ = cl.assignment(id)
		return !slices.ContainsFunc(after.Workers, func(w coord.Slot) bool { return w.Supervisor == "s2" })
	})
	if after.Workers[kept] != before.Workers[kept] || after.Version != before.Version+1 {
		t.Errorf("after losing s2: %s, was %s; want worker %d kept and one version more", describe(after), describe(before), kept)
	}
}

// Nimbus writes to etcd only when something changes: reconciling a
// cluster in which nothing did writes nothing.
func TestReconcileWithoutChangesWritesNothing(t *testing.T) {
	cl := newCluster(t)
	cl.supervisor("s1", 6700, 6701)
	nd := cl.startNimbus("n1", "", nil)
	nd.leads()
	nd.mustSubmit(newSubmission("wc", 2, 1))
	if _, err := nd.api.Deactivate(testutil.Context(t), &nimbuspb.DeactivateRequest{Name: "wc"}); err != nil {
		t.Fatal(err)
	}
	rev := cl.etcd.RaftIndex()
	for range 3 {
		if _, err := nd.n.reconcile(testutil.Context(t)); err != nil {
			t.Fatal(err)
		}
	}
	if got := cl.etcd.RaftIndex(); got != rev {
		t.Errorf("reconciling an unchanged cluster moved the raft index from %d to %d", rev, got)
	}
}

func TestIsolatedTopologyGetsAMachineToItself(t *testing.T) {
	cl := newCluster(t)
	cl.supervisor("s1", 6700, 6701)
	cl.supervisor("s2", 6700, 6701)
	nd := cl.startNimbus("n1", "", func(c *Config) { c.Cluster = gale.Config{config.IsolationSchedulerMachines: map[string]any{"iso": 1}} })
	nd.leads()
	shared := nd.mustSubmit(newSubmission("shared", 2, 1)).GetId()
	iso := nd.mustSubmit(newSubmission("iso", 1, 2)).GetId()
	ia, ok := cl.assignment(iso)
	if !ok || len(ia.Workers) != 1 {
		t.Fatalf("the isolated topology: %s, %v", describe(ia), ok)
	}
	sa, _ := cl.assignment(shared)
	for _, w := range sa.Workers {
		if w.Supervisor == ia.Workers[0].Supervisor {
			t.Errorf("the shared topology runs on %s, the isolated topology's machine: %s", w.Supervisor, describe(sa))
		}
	}
}

// With topology.min.replication.count 2, a submission returns once a
// standby holds its artifact too.
func TestSubmitWaitsForReplication(t *testing.T) {
	cl := newCluster(t)
	cl.supervisor("s1", 6700, 6701)
	two := func(c *Config) { c.Cluster = gale.Config{gale.TopologyMinReplicationCount: 2} }
	a := cl.startNimbus("a", "", two)
	a.leads()
	b := cl.startNimbus("b", "", two)
	sub := newSubmission("wc", 1, 1)
	resp := a.mustSubmit(sub)
	sha := sub.header.Artifact.Sha256
	if !b.holds(sha) {
		t.Error("Submit returned before the standby held the artifact")
	}
	hs, _ := cl.store.Holders(testutil.Context(t), sha)
	if !slices.Contains(hs, "a") || !slices.Contains(hs, "b") {
		t.Errorf("Holders: got %v, want a and b", hs)
	}
	if _, ok := cl.assignment(resp.GetId()); !ok {
		t.Error("not assigned after replication")
	}
}

// Past topology.max.replication.wait.time.sec, nimbus schedules with
// fewer holders than asked for, and says so.
func TestSubmitStopsWaitingForReplication(t *testing.T) {
	cl := newCluster(t)
	cl.supervisor("s1", 6700)
	nd := cl.startNimbus("a", "", func(c *Config) {
		c.Cluster = gale.Config{gale.TopologyMinReplicationCount: 2, gale.TopologyMaxReplicationWaitTimeSec: 1}
	})
	nd.leads()
	resp := nd.mustSubmit(newSubmission("wc", 1, 1))
	if _, ok := cl.assignment(resp.GetId()); !ok {
		t.Error("not assigned after the replication wait")
	}
	if !strings.Contains(nd.logs.String(), "scheduling before the artifact is replicated") {
		t.Error("the log does not say the artifact was not replicated")
	}
}

// With nimbus.tls.cert and nimbus.tls.key, the API speaks TLS only, and
// nimbuses replicate over it.
func TestTLS(t *testing.T) {
	cl := newCluster(t)
	cl.supervisor("s1", 6700)
	cert, key := testutil.CertFiles(t)
	withTLS := func(c *Config) { c.Cluster = gale.Config{config.NimbusTLSCert: cert, config.NimbusTLSKey: key} }
	a := cl.startNimbus("a", "", withTLS)
	a.leads()
	sub := newSubmission("wc", 1, 1)
	a.mustSubmit(sub)
	b := cl.startNimbus("b", "", withTLS)
	testutil.Eventually(t, 30*time.Second, "b replicates over TLS", func() bool { return b.holds(sub.header.Artifact.Sha256) })

	conn, err := grpc.NewClient(a.n.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := nimbuspb.NewNimbusClient(conn).List(testutil.Context(t), &nimbuspb.ListRequest{}); err == nil {
		t.Error("a plaintext client was served by a TLS nimbus")
	}
}

func TestNewRefusesHalfATLSConfig(t *testing.T) {
	cert, _ := testutil.CertFiles(t)
	_, err := New(Config{Dir: t.TempDir(), Endpoints: []string{"http://127.0.0.1:2379"}, Cluster: gale.Config{config.NimbusTLSCert: cert}})
	if err == nil || !strings.Contains(err.Error(), "nimbus.tls.key") {
		t.Errorf("New with a certificate and no key: got %v, want an error naming nimbus.tls.key", err)
	}
}

// A nimbus restarted on its directory holds again the artifacts it
// stored, deletes one corrupted meanwhile and one no topology uses (a
// submission cut short), and fetches the corrupted one again.
func TestRestartChecksTheArtifactsOnDisk(t *testing.T) {
	cl := newCluster(t)
	cl.supervisor("s1", 6700, 6701)
	adir, bdir := t.TempDir(), t.TempDir()
	a := cl.startNimbus("a", adir, nil)
	a.leads()
	sub := newSubmission("wc", 1, 1)
	a.mustSubmit(sub)
	sha := sub.header.Artifact.Sha256
	b := cl.startNimbus("b", bdir, nil)
	testutil.Eventually(t, 30*time.Second, "b replicates the artifact", func() bool { return b.holds(sha) })
	b.stop()
	a.stop()

	path := filepath.Join(bdir, "artifacts", sha)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[0] ^= 0xff
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	orphan := newSubmission("never", 1, 7)
	if err := os.WriteFile(filepath.Join(adir, "artifacts", orphan.header.Artifact.Sha256), orphan.data, 0o644); err != nil {
		t.Fatal(err)
	}

	a = cl.startNimbus("a", adir, nil)
	a.leads()
	testutil.Eventually(t, 30*time.Second, "the new leader deletes the artifact no topology uses", func() bool {
		return !a.holds(orphan.header.Artifact.Sha256)
	})
	b = cl.startNimbus("b", bdir, nil)
	if !strings.Contains(b.logs.String(), "deleting a corrupted artifact") {
		t.Error("b did not say it deleted the corrupted artifact")
	}
	testutil.Eventually(t, 30*time.Second, "b fetches the artifact again", func() bool { return b.holds(sha) })
	if got, _ := os.ReadFile(path); string(got) != string(sub.data) {
		t.Error("b's copy is not the artifact")
	}
}

func TestAdvertised(t *testing.T) {
	host, _ := os.Hostname()
	tests := []struct {
		configured string
		bound      *net.TCPAddr
		want       string
	}{
		{"nimbus1:6627", &net.TCPAddr{IP: net.IPv4zero, Port: 6627}, "nimbus1:6627"},
		{"", &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 6627}, "127.0.0.1:6627"},
		{"", &net.TCPAddr{IP: net.IPv4zero, Port: 6627}, net.JoinHostPort(host, "6627")},
		{"", &net.TCPAddr{IP: net.IPv6unspecified, Port: 7000}, net.JoinHostPort(host, "7000")},
	}
	for _, tt := range tests {
		if got := advertised(tt.configured, tt.bound); got != tt.want {
			t.Errorf("advertised(%q, %v): got %q, want %q", tt.configured, tt.bound, got, tt.want)
		}
	}
}

func TestIDIsKeptInTheDirectory(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Dir: dir, Endpoints: []string{"http://127.0.0.1:2379"}}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{Dir: t.TempDir(), Endpoints: cfg.Endpoints})
	if err != nil {
		t.Fatal(err)
	}
	if a.ID() == "" || a.ID() != b.ID() || c.ID() == a.ID() {
		t.Errorf("ids: %q and %q in one directory, %q in another; want the first two equal, the third not", a.ID(), b.ID(), c.ID())
	}
}
