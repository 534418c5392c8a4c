package nimbus

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/coord/etcdembed"
	"github.com/gale-stream/gale/internal/nimbuspb"
	"github.com/gale-stream/gale/internal/plan"
	"github.com/gale-stream/gale/internal/testutil"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// cluster is an embedded etcd and a Store on it for the test's own reads
// and writes, closed by the test's cleanup after the nimbuses.
type cluster struct {
	t     *testing.T
	etcd  *etcdembed.Etcd
	store *coord.Store
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	e, err := etcdembed.Start(etcdembed.Config{Dir: t.TempDir(), ClientURL: "http://127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := coord.Dial(e.Endpoints)
	if err != nil {
		e.Close()
		t.Fatal(err)
	}
	cl := &cluster{t: t, etcd: e, store: coord.NewStore(c)}
	t.Cleanup(func() {
		cl.store.Close()
		c.Close()
		e.Close()
	})
	return cl
}

// supervisor joins a supervisor with the given ports, for the test's
// life or until its membership is closed.
func (cl *cluster) supervisor(id string, ports ...int) *coord.Membership {
	cl.t.Helper()
	m, err := cl.store.JoinSupervisor(testutil.Context(cl.t), coord.Supervisor{ID: id, Host: "127.0.0.1", Ports: ports, Started: time.Now()}, 10*time.Second)
	if err != nil {
		cl.t.Fatal(err)
	}
	cl.t.Cleanup(m.Close)
	return m
}

// node is one nimbus run by a test, with a client of its API.
type node struct {
	t    *testing.T
	n    *Nimbus
	dir  string
	logs *logBuffer
	api  nimbuspb.NimbusClient
	conn *grpc.ClientConn
	stop func() // cancels Run and waits for it; idempotent
}

// startNimbus starts a nimbus with its state in dir ("" for a new one),
// its Config changed by mod, and waits until it serves.
func (cl *cluster) startNimbus(id, dir string, mod func(*Config)) *node {
	t := cl.t
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	logs := &logBuffer{t: t}
	cfg := Config{
		ID:        id,
		Dir:       dir,
		Listen:    "127.0.0.1:0",
		Endpoints: cl.etcd.Endpoints,
		Logger:    slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if mod != nil {
		mod(&cfg)
	}
	n, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	select {
	case <-n.Ready():
	case err := <-done:
		cancel()
		t.Fatalf("Run: %v", err)
	}
	creds := insecure.NewCredentials()
	if n.tls != nil {
		if creds, err = n.clientCreds(); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := grpc.NewClient(n.Addr(), grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	nd := &node{t: t, n: n, dir: dir, logs: logs, api: nimbuspb.NewNimbusClient(conn), conn: conn}
	nd.stop = func() {
		once.Do(func() {
			conn.Close()
			cancel()
			if err := <-done; err != nil {
				t.Errorf("nimbus %s: Run: %v", id, err)
			}
		})
	}
	t.Cleanup(nd.stop)
	return nd
}

// logBuffer passes a nimbus's log lines to t.Log and keeps them.
type logBuffer struct {
	t  *testing.T
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Write(p)
	l.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// leads waits until nd is the leader.
func (nd *node) leads() {
	nd.t.Helper()
	testutil.Eventually(nd.t, 30*time.Second, "nimbus "+nd.n.ID()+" leads", nd.n.IsLeader)
}

// topology is a word count's definition: a spout and two bolts.
func topology() plan.Topology {
	return plan.Topology{
		Components: []plan.Component{
			{ID: "sentences", Spout: true, Tasks: 2, Parallelism: 2, Streams: []string{"default"}},
			{ID: "split", Tasks: 4, Parallelism: 4, Streams: []string{"default"}, Inputs: []plan.Input{{Component: "sentences", Stream: "default"}}},
			{ID: "count", Tasks: 4, Parallelism: 2, Streams: []string{"default"}, Inputs: []plan.Input{{Component: "split", Stream: "default"}}},
		},
	}
}

// submission is what a test submits: a header and the artifact's bytes.
type submission struct {
	header *nimbuspb.SubmitHeader
	data   []byte
}

func newSubmission(name string, workers int, seed uint64) submission {
	r := rand.New(rand.NewPCG(seed, 1))
	data := make([]byte, 10000+r.IntN(5000))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	h := sha256.Sum256(data)
	conf, _ := json.Marshal(gale.Config{gale.TopologyMessageTimeoutSecs: 5})
	return submission{
		header: &nimbuspb.SubmitHeader{
			Name:       name,
			Definition: Definition(topology(), "wordcount", map[string]string{"lang": "en"}, workers),
			ConfigJson: conf,
			Artifact:   &nimbuspb.Artifact{Sha256: hex.EncodeToString(h[:]), Size: int64(len(data)), Goos: "linux", Goarch: "amd64", GaleVersion: "dev", WireVersion: 1},
		},
		data: data,
	}
}

// submit sends s in chunks of 1000 bytes.
func (nd *node) submit(ctx context.Context, s submission) (*nimbuspb.SubmitResponse, error) {
	stream, err := nd.api.Submit(ctx)
	if err != nil {
		return nil, err
	}
	if s.header != nil {
		if err := stream.Send(&nimbuspb.SubmitRequest{Part: &nimbuspb.SubmitRequest_Header{Header: s.header}}); err != nil {
			return stream.CloseAndRecv()
		}
	}
	for b := s.data; len(b) > 0; {
		k := min(len(b), 1000)
		if err := stream.Send(&nimbuspb.SubmitRequest{Part: &nimbuspb.SubmitRequest_Chunk{Chunk: b[:k]}}); err != nil {
			break // the server refused: CloseAndRecv says why
		}
		b = b[k:]
	}
	return stream.CloseAndRecv()
}

func (nd *node) mustSubmit(s submission) *nimbuspb.SubmitResponse {
	nd.t.Helper()
	resp, err := nd.submit(testutil.Context(nd.t), s)
	if err != nil {
		nd.t.Fatalf("Submit %q: %v", s.header.GetName(), err)
	}
	return resp
}

// holds reports whether nd's artifact store has sha.
func (nd *node) holds(sha string) bool {
	_, err := os.Stat(filepath.Join(nd.dir, "artifacts", sha))
	return err == nil
}

// artifactFiles lists every file in nd's artifact directory.
func (nd *node) artifactFiles() []string {
	entries, err := os.ReadDir(filepath.Join(nd.dir, "artifacts"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		nd.t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// assignment returns the assignment of topology id, or false.
func (cl *cluster) assignment(id string) (coord.Assignment, bool) {
	cl.t.Helper()
	as, err := cl.store.Assignments(testutil.Context(cl.t))
	if err != nil {
		cl.t.Fatal(err)
	}
	for _, a := range as {
		if a.Topology == id {
			return a, true
		}
	}
	return coord.Assignment{}, false
}

func (cl *cluster) topologies() []coord.Topology {
	cl.t.Helper()
	ts, err := cl.store.Topologies(testutil.Context(cl.t))
	if err != nil {
		cl.t.Fatal(err)
	}
	return ts
}

func describe(a coord.Assignment) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "v%d active=%v workers=%v executors=%v", a.Version, a.Active, a.Workers, a.Executors)
	return b.String()
}
