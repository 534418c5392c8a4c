//go:build unix

package supervisor

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/countfile"
	"github.com/gale-stream/gale/internal/nimbuspb"
	"github.com/gale-stream/gale/internal/workerproc"
)

func init() {
	workerproc.Register("run:acksource", ackSourceFactory)
}

// ackSourceFactory is ticks whose spout tells a source outside the
// worker of every ack, one line per ack on the unix socket params.sock,
// from inside Ack: what a queue that deletes a message on its ack sees.
// A worker that cannot dial it (a restarted one) tells no one.
func ackSourceFactory(raw json.RawMessage) (*workerproc.Built, error) {
	var p struct {
		Sock string `json:"sock"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	b := gale.NewTopologyBuilder()
	b.SetSpout("source", func() gale.Spout { return &ackSourceSpout{sock: p.Sock} }, 1)
	b.SetBolt("sink", func() gale.Bolt { return &sinkBolt{} }, 1).ShuffleGrouping("source")
	topo, err := b.Build()
	if err != nil {
		return nil, err
	}
	return &workerproc.Built{Topology: topo}, nil
}

type ackSourceSpout struct {
	gale.BaseSpout
	sock string
	conn net.Conn
	n    int
	last time.Time
}

func (*ackSourceSpout) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("n") }

func (s *ackSourceSpout) Open(_ *gale.TopologyContext, c *gale.SpoutCollector) error {
	s.Collector = c
	s.conn, _ = net.Dial("unix", s.sock)
	return nil
}

func (s *ackSourceSpout) NextTuple() {
	if time.Since(s.last) < time.Millisecond {
		time.Sleep(200 * time.Microsecond) // an idle spout, not a busy loop
		return
	}
	s.last = time.Now()
	s.n++
	s.Collector.Emit(s.n, s.n)
}

func (s *ackSourceSpout) Ack(any) {
	if s.conn != nil {
		s.conn.Write([]byte("a\n"))
	}
}

func (s *ackSourceSpout) Close() {
	if s.conn != nil {
		s.conn.Close()
	}
}

// spoutAcked is the acked count of component id in cs.
func spoutAcked(cs []*nimbuspb.ComponentStats, id string) int64 {
	for _, c := range cs {
		if c.GetComponent() == id {
			return c.GetAcked()
		}
	}
	return 0
}

// TestSupervisorKeepsTheCountsOfAKilledWorker: a worker killed with -9
// long after its last heartbeat keeps, in its topology's totals, every
// ack its source saw: its spout's counts reach the worker's counter
// file before the spout's Ack runs, and the supervisor folds the file
// in when the process ends, or when a supervisor started after it finds
// it gone. Without the file the totals keep only the last heartbeat's.
func TestSupervisorKeepsTheCountsOfAKilledWorker(t *testing.T) {
	t.Run("supervisor running", func(t *testing.T) { testKilledWorkerCounts(t, false) })
	t.Run("supervisor down", func(t *testing.T) { testKilledWorkerCounts(t, true) })
}

// testKilledWorkerCounts is TestSupervisorKeepsTheCountsOfAKilledWorker,
// with the supervisor stopped over the kill if down.
func testKilledWorkerCounts(t *testing.T, down bool) {
	tc := newTestCluster(t)
	dir := shortDir(t)
	ports := freePorts(t, 2)
	cfg := tc.supervisorConfig(t, dir, ports)
	// One heartbeat at the first ack, then none: every later ack is
	// known to the worker and its source only.
	cfg.WorkerHeartbeat, cfg.WorkerTimeout = time.Hour, 2*time.Hour
	sock := filepath.Join(dir, "src.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	stop := runSupervisor(t, cfg)

	asg := coord.Assignment{Topology: "t1", Name: "acks", Version: 1, Active: true, Artifact: tc.art, Factory: "acksource",
		Params:  map[string]string{"sock": sock},
		Workers: []coord.Slot{{Supervisor: "s1", Host: "127.0.0.1", Port: ports[1]}}}
	if err := tc.store.PutAssignment(t.Context(), asg); err != nil {
		t.Fatal(err)
	}
	var pid int32
	tc.nimbus.waitReport(t, "a valid worker that acked", validOn(ports[1], &pid, true))
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	ln.Close() // the restarted worker tells no one
	defer c.Close()
	sc := bufio.NewScanner(c)
	var seen int64
	const killAt = 300
	for seen < killAt && sc.Scan() {
		seen++
	}
	if seen < killAt {
		t.Fatalf("the source saw %d acks, then the worker went away (%v)", seen, sc.Err())
	}
	if down {
		stop()
	}
	if err := syscall.Kill(int(pid), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() { // what it told the source until it died
		seen++
	}
	if down {
		runSupervisor(t, cfg)
	}
	r := tc.nimbus.waitReport(t, "the killed worker retired", func(r *nimbuspb.ReportRequest) bool {
		w := workerOn(r, ports[1])
		return len(r.GetTotals()) > 0 && (w == nil || w.Pid != pid)
	})
	var running int64
	for _, w := range r.Workers {
		running += spoutAcked(w.GetComponents(), "source")
	}
	var total int64
	for _, tt := range r.GetTotals() {
		if tt.GetTopology() == "t1" {
			total = spoutAcked(tt.GetComponents(), "source")
		}
	}
	if retired := total - running; retired < seen {
		t.Errorf("the killed worker's acked in the totals: %d (total %d less %d running), want ≥ the %d its source saw", retired, total, running, seen)
	} else {
		t.Logf("the killed worker's acked in the totals: %d, its source saw %d", retired, seen)
	}
}

// TestWithCountFile: an ended worker's counter file raises its spouts'
// counters to the file's, never lowers them, leaves the bolts alone and
// is removed; a file of another worker or topology, or garbage, changes
// nothing.
func TestWithCountFile(t *testing.T) {
	dir := t.TempDir()
	s := &Supervisor{cfg: Config{Dir: dir}, log: slog.New(slog.NewTextHandler(testWriter{t}, nil))}
	p := &proc{Observed: Observed{Port: 6700, PID: 4242, Running: Desired{Topology: "t1"}}}
	os.MkdirAll(filepath.Dir(s.countsPath(p.Port)), 0o755)
	hb := []*nimbuspb.ComponentStats{
		{Component: "a", Kind: "spout", Acked: 10, Failed: 5, Emitted: 20, Transferred: 20},
		{Component: "sink", Kind: "bolt", Acked: 7},
	}
	write := func(l countfile.Layout, counts ...countfile.Counts) {
		t.Helper()
		f, err := countfile.Create(s.countsPath(p.Port), l)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for i, c := range counts {
			f.Counter(i, 0).Store(c.Acked)
			f.Counter(i, 1).Store(c.Failed)
			f.Counter(i, 2).Store(c.Emitted)
			f.Counter(i, 3).Store(c.Transferred)
		}
	}
	slots := []countfile.Slot{{Component: "a", FirstTask: 1}, {Component: "a", FirstTask: 2}, {Component: "b", FirstTask: 3}}
	write(countfile.Layout{Topology: "t1", PID: 4242, Slots: slots},
		countfile.Counts{Acked: 8, Failed: 1, Emitted: 15, Transferred: 15}, countfile.Counts{Acked: 6, Emitted: 9, Transferred: 9},
		countfile.Counts{Acked: 3, Emitted: 3, Transferred: 3})
	got := s.withCountFile(p, hb)
	want := []*nimbuspb.ComponentStats{
		{Component: "a", Kind: "spout", Acked: 14, Failed: 5, Emitted: 24, Transferred: 24},
		{Component: "sink", Kind: "bolt", Acked: 7},
		{Component: "b", Kind: "spout", Acked: 3, Emitted: 3, Transferred: 3},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if !proto.Equal(got[i], want[i]) {
			t.Errorf("component %d: %v, want %v", i, got[i], want[i])
		}
	}
	if hb[0].Acked != 10 {
		t.Errorf("the heartbeat's counters were changed: %v", hb[0])
	}
	if _, err := os.Stat(s.countsPath(p.Port)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the counter file is still there after its fold: %v", err)
	}

	for name, l := range map[string]countfile.Layout{
		"another pid":      {Topology: "t1", PID: 1, Slots: slots[:1]},
		"another topology": {Topology: "t2", PID: 4242, Slots: slots[:1]},
	} {
		write(l, countfile.Counts{Acked: 1000})
		if got := s.withCountFile(p, hb); got[0].Acked != 10 {
			t.Errorf("%s: the file's counts were taken: %v", name, got)
		}
	}
	os.WriteFile(s.countsPath(p.Port), []byte("garbage"), 0o600)
	if got := s.withCountFile(p, hb); got[0].Acked != 10 {
		t.Errorf("garbage: %v", got)
	}
}
