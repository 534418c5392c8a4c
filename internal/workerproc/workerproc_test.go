package workerproc

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/workermem"
)

// The test binary is also the worker binary: run with workerEnv set, it
// runs one worker instead of the tests.
const workerEnv = "GALE_WORKERPROC_TEST_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		os.Exit(RunProcess("workerproc test worker", os.Args[1:]))
	}
	goleak.VerifyTestMain(m)
}

func init() {
	Register("e2e-wordcount", e2eFactory)
}

// e2eParams shape the test word count.
type e2eParams struct {
	Sentences int     `json:"sentences"` // per spout task
	Rate      float64 `json:"rate"`      // sentences per second per spout task
}

// e2eStats is what a worker reports: its spouts' progress.
type e2eStats struct {
	Emitted int64 `json:"emitted"` // first emits, not replays
	Acked   int64 `json:"acked"`   // distinct sentences acked
	Failed  int64 `json:"failed"`  // fails (each replayed)
	Words   int64 `json:"words"`   // words counted
	// The worker process's memory settings, as its runtime has them.
	GCPercent int   `json:"gc_percent"`
	MemLimit  int64 `json:"mem_limit"`
}

func e2eFactory(raw json.RawMessage) (*Built, error) {
	var p e2eParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	var emitted, acked, failed, words atomic.Int64
	b := gale.NewTopologyBuilder()
	b.SetSpout("sentences", func() gale.Spout {
		return &replaySpout{p: p, emitted: &emitted, acked: &acked, failed: &failed}
	}, 1)
	b.SetBolt("split", func() gale.Bolt { return &splitBolt{} }, 2).LocalOrShuffleGrouping("sentences")
	b.SetBolt("count", func() gale.Bolt { return &countBolt{words: &words} }, 2).FieldsGrouping("split", "word")
	topo, err := b.Build()
	if err != nil {
		return nil, err
	}
	return &Built{
		Topology: topo,
		Config:   gale.Config{gale.TopologyMessageTimeoutSecs: 3},
		Stats: func() any {
			gogc := debug.SetGCPercent(-1) // reads it, restored at once
			debug.SetGCPercent(gogc)
			return e2eStats{Emitted: emitted.Load(), Acked: acked.Load(), Failed: failed.Load(), Words: words.Load(),
				GCPercent: gogc, MemLimit: debug.SetMemoryLimit(-1)}
		},
	}, nil
}

// replaySpout emits p.Sentences sentences at p.Rate, each with its number
// as message id, and emits a failed one again.
type replaySpout struct {
	gale.BaseSpout
	p                      e2eParams
	emitted, acked, failed *atomic.Int64
	n                      int
	start                  time.Time
	done                   []bool
}

func (*replaySpout) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("sentence") }

func (s *replaySpout) Open(tc *gale.TopologyContext, c *gale.SpoutCollector) error {
	s.Collector = c
	s.start = time.Now()
	s.done = make([]bool, s.p.Sentences)
	return nil
}

func e2eSentence(i int) string {
	return fmt.Sprintf("w%d w%d w%d w%d", i%41, (i*3)%41, (i+7)%41, i%3)
}

func (s *replaySpout) NextTuple() {
	due := int(time.Since(s.start).Seconds() * s.p.Rate)
	for ; s.n < s.p.Sentences && s.n < due; s.n++ {
		s.Collector.Emit(s.n, e2eSentence(s.n))
		s.emitted.Add(1)
	}
}

func (s *replaySpout) Ack(id any) {
	if i := id.(int); !s.done[i] {
		s.done[i] = true
		s.acked.Add(1)
	}
}

func (s *replaySpout) Fail(id any, _ error) {
	s.failed.Add(1)
	s.Collector.Emit(id, e2eSentence(id.(int)))
}

type splitBolt struct{ gale.BaseBolt }

func (*splitBolt) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("word") }

func (b *splitBolt) Execute(t *gale.Tuple) {
	for _, w := range strings.Fields(t.GetString(0)) {
		b.Collector.Emit(t, w)
	}
	b.Collector.Ack(t)
}

type countBolt struct {
	gale.BaseBolt
	words *atomic.Int64
}

func (*countBolt) DeclareOutputFields(gale.OutputDeclarer) {}

func (b *countBolt) Execute(t *gale.Tuple) {
	b.words.Add(1)
	b.Collector.Ack(t)
}

// progress collects the workers' latest stats.
type progress struct {
	mu      sync.Mutex
	beats   int              // stats received, from any worker
	stats   map[int]e2eStats // by worker, from its latest incarnation
	inc     map[int]int      // the incarnation stats holds, by worker
	changed chan struct{}
}

func newProgress() *progress {
	return &progress{stats: map[int]e2eStats{}, inc: map[int]int{}, changed: make(chan struct{}, 1)}
}

// take keeps each worker's latest stats. A killed incarnation's last lines
// may be read after its successor's first: they are dropped.
func (p *progress) take(worker, incarnation int, m Message) {
	if m.Stats == nil {
		return
	}
	var s e2eStats
	if json.Unmarshal(m.Stats, &s) != nil {
		return
	}
	p.mu.Lock()
	if incarnation < p.inc[worker] {
		p.mu.Unlock()
		return
	}
	p.stats[worker], p.inc[worker] = s, incarnation
	p.beats++
	p.mu.Unlock()
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

func (p *progress) get(worker int) e2eStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats[worker]
}

// wait waits until cond holds over the latest stats.
func (p *progress) wait(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-p.changed:
		case <-deadline.C:
			t.Fatalf("timed out after %s waiting for %s; worker 0 reports %+v", timeout, what, p.get(0))
		}
	}
}

func launch(t *testing.T, params e2eParams, n int, restart bool, prog *progress) *Cluster {
	t.Helper()
	raw, _ := json.Marshal(params)
	c, err := Launch(LaunchConfig{
		Env:       []string{workerEnv + "=1"},
		Spec:      Spec{Topology: "e2e", Factory: "e2e-wordcount", Params: raw, HeartbeatMS: 50, LogLevel: "warn"},
		N:         n,
		Dir:       t.TempDir(),
		OnMessage: prog.take,
		Restart:   restart,
	})
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	return c
}

// TestKillWorkerEveryMessageAcked runs an acked word count in two worker
// processes and kills the one without the spout with SIGKILL in the middle
// of it. Its trees fail by timeout, the spout replays them, the killed
// worker is started again (as a supervisor would), and every sentence is
// acked in the end.
func TestKillWorkerEveryMessageAcked(t *testing.T) {
	const sentences = 30000
	prog := newProgress()
	// Executors in id order: count (worker 0, worker 1), sentences
	// (worker 0), split (worker 1, worker 0). Worker 1 runs a counter and
	// a splitter, and no spout: every ack it sends crosses.
	c := launch(t, e2eParams{Sentences: sentences, Rate: 10000}, 2, true, prog)
	stopped := false
	defer func() {
		if !stopped {
			c.Stop(10 * time.Second)
		}
	}()
	prog.wait(t, "a fifth of the sentences acked", 30*time.Second, func() bool { return prog.get(0).Acked >= sentences/5 })
	before := prog.get(0)
	if err := c.Kill(1); err != nil {
		t.Fatal(err)
	}
	prog.wait(t, "every sentence acked", 90*time.Second, func() bool { return prog.get(0).Acked == sentences })
	after := prog.get(0)
	stopped = true
	if err := c.Stop(10 * time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if c.Restarts() != 1 {
		t.Errorf("worker restarted %d times, want 1", c.Restarts())
	}
	if after.Emitted != sentences {
		t.Errorf("emitted %d first times, want %d", after.Emitted, sentences)
	}
	if after.Failed == 0 {
		t.Errorf("no tree failed although a worker died with %d of %d sentences acked: the kill lost nothing?", before.Acked, sentences)
	}
	t.Logf("killed worker 1 at %d acked; %d fails replayed; all %d acked", before.Acked, after.Failed, sentences)
}

// TestPinCPUs launches two workers with worker.cpu.pinning and checks that every
// thread of each runs on its own share of the CPUs only, with GOMAXPROCS
// to match, and that a worker started again after a SIGKILL is bound to
// the same CPUs.
func TestPinCPUs(t *testing.T) {
	allowed, err := allowedCPUs()
	if err != nil {
		t.Skip(err)
	}
	if len(allowed) < 2 {
		t.Skipf("this process may run on %d CPU; pinning two workers needs two", len(allowed))
	}
	var mu sync.Mutex
	pids := map[[2]int]int{} // (worker, incarnation) → pid
	listening := make(chan struct{}, 4)
	raw, _ := json.Marshal(e2eParams{Sentences: 0, Rate: 1})
	c, err := Launch(LaunchConfig{
		Env: []string{workerEnv + "=1"},
		Spec: Spec{Topology: "e2e", Factory: "e2e-wordcount", Params: raw, HeartbeatMS: 50, LogLevel: "warn",
			Cluster: gale.Config{CPUPinningKey: true}},
		N:   2,
		Dir: t.TempDir(),
		OnMessage: func(w, inc int, m Message) {
			if m.Event == EventListening {
				mu.Lock()
				pids[[2]int{w, inc}] = m.PID
				mu.Unlock()
				listening <- struct{}{}
			}
		},
		Restart: true,
	})
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	defer c.Stop(10 * time.Second)
	want := shareCPUs(allowed, 2)
	if got := fmt.Sprint(c.CPUs()); got != fmt.Sprint(want) {
		t.Fatalf("Cluster.CPUs() = %s, want %v", got, want)
	}
	pid := func(w, inc int) int {
		mu.Lock()
		defer mu.Unlock()
		return pids[[2]int{w, inc}]
	}
	check := func(w, inc int) {
		t.Helper()
		p := pid(w, inc)
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", p))
		if err != nil || len(tasks) == 0 {
			t.Fatalf("worker %d (pid %d): its threads: %v", w, p, err)
		}
		for _, task := range tasks {
			got, err := cpusAllowed(fmt.Sprintf("/proc/%d/task/%s/status", p, task.Name()))
			if err != nil {
				continue // the thread exited meanwhile
			}
			if fmt.Sprint(got) != fmt.Sprint(want[w]) {
				t.Errorf("worker %d (start %d) thread %s may run on CPUs %v, want %v", w, inc, task.Name(), got, want[w])
			}
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p))
		if err != nil {
			t.Fatal(err)
		}
		if w := fmt.Sprintf("GOMAXPROCS=%d", len(want[w])); !strings.Contains("\x00"+string(env)+"\x00", "\x00"+w+"\x00") {
			t.Errorf("worker's environment lacks %s", w)
		}
	}
	check(0, 0)
	check(1, 0)
	if err := c.Kill(1); err != nil {
		t.Fatal(err)
	}
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for pid(1, 1) == 0 {
		select {
		case <-listening:
		case <-timeout.C:
			t.Fatal("worker 1 was not started again within 30 s")
		}
	}
	check(1, 1)
}

// cpusAllowed reads the Cpus_allowed_list of a /proc status file.
func cpusAllowed(path string) ([]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		list, ok := strings.CutPrefix(line, "Cpus_allowed_list:")
		if !ok {
			continue
		}
		var cpus []int
		for _, r := range strings.Split(strings.TrimSpace(list), ",") {
			var lo, hi int
			if n, _ := fmt.Sscanf(r, "%d-%d", &lo, &hi); n == 2 {
				for c := lo; c <= hi; c++ {
					cpus = append(cpus, c)
				}
			} else if _, err := fmt.Sscanf(r, "%d", &lo); err == nil {
				cpus = append(cpus, lo)
			}
		}
		return cpus, nil
	}
	return nil, fmt.Errorf("%s: no Cpus_allowed_list", path)
}

func TestShareCPUs(t *testing.T) {
	for _, c := range []struct {
		cpus []int
		n    int
		want string
	}{
		{[]int{0, 1}, 2, "[[0] [1]]"},
		{[]int{0, 1, 2, 3, 4}, 2, "[[0 1] [2 3 4]]"},
		{[]int{2, 3, 6, 7}, 3, "[[2] [3] [6 7]]"},
		{[]int{0, 1, 2, 3}, 4, "[[0] [1] [2] [3]]"},
	} {
		if got := fmt.Sprint(shareCPUs(c.cpus, c.n)); got != c.want {
			t.Errorf("shareCPUs(%v, %d) = %s, want %s", c.cpus, c.n, got, c.want)
		}
	}
}

// TestWorkerMemoryFromConfig checks that a worker process runs with the
// memory settings of the cluster's layer: its GOGC and its heap budget as
// the memory limit; that a bad setting stops it with an error naming the
// key; and that a topology may not set them.
func TestWorkerMemoryFromConfig(t *testing.T) {
	prog := newProgress()
	raw, _ := json.Marshal(e2eParams{Sentences: 0, Rate: 1})
	spec := Spec{Topology: "e2e", Factory: "e2e-wordcount", Params: raw, HeartbeatMS: 50, LogLevel: "warn",
		Cluster: gale.Config{workermem.KeyGOGC: 300, workermem.KeyGCFloorMB: 0,
			workermem.KeyHeapPretouch: false, workermem.KeyHeapMemoryMB: 256}}
	c, err := Launch(LaunchConfig{Env: []string{workerEnv + "=1"}, Spec: spec, N: 1, Dir: t.TempDir(), OnMessage: prog.take})
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	defer c.Stop(10 * time.Second)
	prog.wait(t, "a heartbeat", 30*time.Second, func() bool { return prog.get(0).MemLimit != 0 })
	if got := prog.get(0); got.GCPercent != 300 || got.MemLimit != 256<<20 {
		t.Errorf("worker runs with GOGC %d and a memory limit of %d bytes, want 300 and %d", got.GCPercent, got.MemLimit, 256<<20)
	}

	for _, bad := range []struct {
		name              string
		cluster, topology gale.Config
		want              string
	}{
		{"out of range", gale.Config{workermem.KeyGOGC: 10}, nil,
			`"worker.gogc" in gale.yaml must be -1 (off) or ≥ 25, got 10`},
		{"set by the topology", nil, gale.Config{workermem.KeyGOGC: 300},
			`"worker.gogc" may not be set in topology config`},
	} {
		spec := spec
		spec.Cluster, spec.Config = bad.cluster, bad.topology
		_, err = Launch(LaunchConfig{Env: []string{workerEnv + "=1"}, Spec: spec, N: 1, Dir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: Launch: %v, want an error saying %s", bad.name, err, bad.want)
		}
	}
}

// TestSpecLeavesNoFile: a worker gets its spec without a file that a
// launcher killed with SIGKILL would leave behind: the launch directory
// stays empty while the workers run, also after a restart.
func TestSpecLeavesNoFile(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("on Windows the spec is a file, removed once the worker has read it")
	}
	dir := t.TempDir()
	prog := newProgress()
	raw, _ := json.Marshal(e2eParams{Sentences: 0, Rate: 1})
	c, err := Launch(LaunchConfig{
		Env:       []string{workerEnv + "=1"},
		Spec:      Spec{Topology: "e2e", Factory: "e2e-wordcount", Params: raw, HeartbeatMS: 50, LogLevel: "warn"},
		N:         2,
		Dir:       dir,
		OnMessage: prog.take,
		Restart:   true,
	})
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	defer c.Stop(10 * time.Second)
	empty := func(when string) {
		t.Helper()
		if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
			t.Errorf("%s: the launch directory holds %v (%v), want nothing", when, ents, err)
		}
	}
	empty("with the workers running")
	if err := c.Kill(1); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for c.Restarts() == 0 && time.Now().Before(deadline) {
		<-time.After(10 * time.Millisecond) // polls the restart, with a deadline
	}
	if c.Restarts() != 1 {
		t.Fatalf("worker 1 was not started again within 30 s")
	}
	empty("after a restart")
}

// TestDrainPastDeadWorker: a worker that dies, and is not started again,
// does not keep Drain from draining the others (a failed send to it ended
// Drain), and Stop reports its death.
func TestDrainPastDeadWorker(t *testing.T) {
	prog := newProgress()
	raw, _ := json.Marshal(e2eParams{Sentences: 0, Rate: 1})
	c, err := Launch(LaunchConfig{
		Env:       []string{workerEnv + "=1"},
		Spec:      Spec{Topology: "e2e", Factory: "e2e-wordcount", Params: raw, HeartbeatMS: 50, LogLevel: "warn"},
		N:         2,
		Dir:       t.TempDir(),
		OnMessage: prog.take,
	})
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	pid := c.PID(1)
	p, err := os.FindProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err != nil { // not Cluster.Kill: an unexpected death
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !c.isGone(1) && time.Now().Before(deadline) {
		<-time.After(10 * time.Millisecond) // polls the supervisor, with a deadline
	}
	if err := c.Drain(20 * time.Second); err != nil {
		t.Errorf("Drain with worker 1 dead: %v, want worker 0 drained", err)
	}
	err = c.Stop(10 * time.Second)
	if err == nil || !strings.Contains(err.Error(), "worker 1 exited") {
		t.Errorf("Stop = %v, want worker 1's death reported", err)
	}
}

// TestDrainDeactivatesRestartedWorker: a worker that dies during a drain
// is started again deactivated, and Drain waits for it to report so: its
// spout does not start emitting again behind the drain's back.
func TestDrainDeactivatesRestartedWorker(t *testing.T) {
	prog := newProgress()
	// Worker 0 runs the spout (TestKillWorkerEveryMessageAcked).
	c := launch(t, e2eParams{Sentences: 1000000, Rate: 2000}, 2, true, prog)
	defer c.Stop(10 * time.Second)
	prog.wait(t, "sentences acked", 30*time.Second, func() bool { return prog.get(0).Acked > 100 })
	done := make(chan error, 1)
	go func() { done <- c.Drain(60 * time.Second) }()
	if err := c.Kill(0); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Drain with worker 0 killed during it: %v", err)
	}
	if c.Restarts() != 1 {
		t.Fatalf("restarts %d, want 1", c.Restarts())
	}
	// Drained: the restarted spout is off and stays off.
	prog.wait(t, "a heartbeat from the restarted worker", 10*time.Second, func() bool {
		prog.mu.Lock()
		defer prog.mu.Unlock()
		return prog.inc[0] >= 1
	})
	at := prog.get(0).Emitted
	c.mu.Lock()
	st := c.status[0].status
	c.mu.Unlock()
	if !st.Stopped {
		t.Errorf("worker 0 after the drain: %+v, want its spouts stopped", st)
	}
	prog.mu.Lock()
	beats := prog.beats
	prog.mu.Unlock()
	prog.wait(t, "more heartbeats", 10*time.Second, func() bool {
		prog.mu.Lock()
		defer prog.mu.Unlock()
		return prog.beats >= beats+6
	})
	if got := prog.get(0).Emitted; got != at {
		t.Errorf("the restarted spout emitted %d after the drain, want 0", got-at)
	}
}
