package gale_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
	"github.com/gale-stream/gale/internal/fieldhash"
)

// groupingRun is what a consumer bolt saw in one run.
type groupingRun struct {
	tasks []int         // the consumer's task ids, ascending
	got   map[int][]int // seq → consumer tasks that received it, ascending
	count map[int]int   // consumer task → tuples received
}

// recBolt makes a bolt that emits (its task id, the input's seq) anchored
// on the input and acks it; prepared collects the task ids it ran as.
func recBolt(prepared *list[[]int]) func() gale.Bolt {
	return func() gale.Bolt {
		return &funcBolt{
			declare: func(d gale.OutputDeclarer) { d.Declare("task", "seq") },
			prepare: func(b *funcBolt) error {
				prepared.add([]int{b.tc.TaskID()})
				return nil
			},
			execute: func(b *funcBolt, in *gale.Tuple) {
				if _, err := b.Collector.Emit(in, b.tc.TaskID(), in.Value(0)); err != nil {
					panic(err)
				}
				b.Collector.Ack(in)
			},
		}
	}
}

// runGrouping feeds vals (first field: an int seq, unique) from spout "src"
// to bolt "rec" subscribed with g, and returns where each tuple went. It
// checks every tuple was acked and none failed.
func runGrouping(t *testing.T, fields []string, vals []gale.Values, g gale.Grouping, tasks, par int) groupingRun {
	t.Helper()
	var prepared list[[]int]
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", func() gale.Spout { return &galetest.FixedSpout{Fields: fields, Values: vals} }, 1)
	b.SetBolt("rec", recBolt(&prepared), par).SetNumTasks(tasks).Grouping("src", gale.DefaultStream, g)
	res := complete(t, build(t, b), galetest.Options{})
	if f := res.Failed("src"); len(f) > 0 {
		t.Fatalf("%d tuples failed, first: %v", len(f), f[0].Reason)
	}
	if got := ints(res.Acked("src")); !slices.Equal(got, rangeInts(0, len(vals))) {
		t.Fatalf("acked %d ids, want all %d exactly once", len(got), len(vals))
	}
	run := groupingRun{got: map[int][]int{}, count: map[int]int{}}
	for _, p := range prepared.all() {
		run.tasks = append(run.tasks, p[0])
	}
	slices.Sort(run.tasks)
	if len(run.tasks) != tasks {
		t.Fatalf("bolt prepared %d tasks %v, want %d", len(run.tasks), run.tasks, tasks)
	}
	for _, v := range res.Emitted("rec") {
		task, seq := v[0].(int), v[1].(int)
		run.got[seq] = append(run.got[seq], task)
		run.count[task]++
	}
	for seq := range run.got {
		slices.Sort(run.got[seq])
	}
	return run
}

func seqValues(n int) []gale.Values {
	vals := make([]gale.Values, n)
	for i := range vals {
		vals[i] = gale.Values{i}
	}
	return vals
}

func TestGroupings(t *testing.T) {
	const n = 120
	tests := []struct {
		name        string
		g           gale.Grouping
		tasks, par  int
		check       func(t *testing.T, run groupingRun)
		description string
	}{
		{name: "shuffle spreads evenly", g: gale.Shuffle(), tasks: 7, par: 3, check: checkEven},
		{name: "shuffle one task", g: gale.Shuffle(), tasks: 1, par: 1, check: checkEven},
		{name: "shuffle divides exactly", g: gale.Shuffle(), tasks: 4, par: 4, check: checkEven},
		{name: "local or shuffle reaches every task", g: gale.LocalOrShuffle(), tasks: 5, par: 2, check: checkOneEachEveryTask},
		{name: "none reaches every task", g: gale.None(), tasks: 5, par: 5, check: checkOneEachEveryTask},
		{name: "all sends every tuple to every task", g: gale.All(), tasks: 4, par: 2, check: func(t *testing.T, run groupingRun) {
			for seq := range n {
				if got := run.got[seq]; !slices.Equal(got, run.tasks) {
					t.Fatalf("tuple %d reached tasks %v, want every task %v once", seq, got, run.tasks)
				}
			}
		}},
		{name: "global sends every tuple to the lowest task", g: gale.Global(), tasks: 4, par: 3, check: func(t *testing.T, run groupingRun) {
			for seq := range n {
				if got := run.got[seq]; !slices.Equal(got, run.tasks[:1]) {
					t.Fatalf("tuple %d reached tasks %v, want only the lowest task %d", seq, got, run.tasks[0])
				}
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, runGrouping(t, []string{"seq"}, seqValues(n), tc.g, tc.tasks, tc.par))
		})
	}
}

// checkOneEachEveryTask: each tuple reached one task, and every task got
// some.
func checkOneEachEveryTask(t *testing.T, run groupingRun) {
	t.Helper()
	for seq, tasks := range run.got {
		if len(tasks) != 1 {
			t.Fatalf("tuple %d reached tasks %v, want exactly one", seq, tasks)
		}
	}
	for _, task := range run.tasks {
		if run.count[task] == 0 {
			t.Fatalf("task %d got no tuple; counts %v", task, run.count)
		}
	}
}

// checkEven: each tuple reached one task, and each task got ⌊n/k⌋ or ⌈n/k⌉
// (round-robin from one emitting task).
func checkEven(t *testing.T, run groupingRun) {
	t.Helper()
	n := len(run.got)
	for seq, tasks := range run.got {
		if len(tasks) != 1 {
			t.Fatalf("tuple %d reached tasks %v, want exactly one", seq, tasks)
		}
	}
	k := len(run.tasks)
	lo, hi := n/k, (n+k-1)/k
	for _, task := range run.tasks {
		if c := run.count[task]; c < lo || c > hi {
			t.Fatalf("task %d got %d of %d tuples, want %d..%d (counts %v)", task, c, n, lo, hi, run.count)
		}
	}
}

// keyTasks maps each key to the consumer tasks its tuples reached.
func keyTasks(run groupingRun, keyOf map[int]string) map[string][]int {
	out := map[string][]int{}
	for seq, tasks := range run.got {
		k := keyOf[seq]
		for _, task := range tasks {
			if !slices.Contains(out[k], task) {
				out[k] = append(out[k], task)
			}
		}
	}
	return out
}

func TestFieldsGroupingSameKeySameTask(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 7))
	for i := range 6 {
		tasks := 1 + rng.IntN(8)
		par := 1 + rng.IntN(tasks)
		twoFields := rng.IntN(2) == 0
		name := fmt.Sprintf("%d tasks %d executors two fields %t", tasks, par, twoFields)
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Log(name)
			// 40 distinct keys of mixed types, each sent several times.
			var pool [][2]any
			for range 40 {
				var a, b any = fmt.Sprintf("k%x", rng.Uint32()), rng.IntN(3)
				if rng.IntN(3) == 0 {
					a = rng.Int64()
				}
				pool = append(pool, [2]any{a, b})
			}
			var vals []gale.Values
			keyOf := map[int]string{}
			for seq := range 300 {
				k := pool[rng.IntN(len(pool))]
				vals = append(vals, gale.Values{seq, k[0], k[1]})
				if twoFields {
					keyOf[seq] = fmt.Sprintf("%T:%v/%v", k[0], k[0], k[1])
				} else {
					keyOf[seq] = fmt.Sprintf("%T:%v", k[0], k[0])
				}
			}
			g := gale.ByFields("a")
			if twoFields {
				g = gale.ByFields("a", "b")
			}
			fields := []string{"seq", "a", "b"}
			first := keyTasks(runGrouping(t, fields, vals, g, tasks, par), keyOf)
			used := map[int]bool{}
			for k, ts := range first {
				if len(ts) != 1 {
					t.Fatalf("key %s reached tasks %v, want one task", k, ts)
				}
				used[ts[0]] = true
			}
			if tasks > 1 && len(used) < 2 {
				t.Fatalf("%d distinct keys all went to task(s) %v of %d tasks: fields grouping does not spread", len(first), used, tasks)
			}
			// A second run (a fresh runtime with its own random seed)
			// routes every key the same way.
			second := keyTasks(runGrouping(t, fields, vals, g, tasks, par), keyOf)
			for k, ts := range first {
				if !slices.Equal(second[k], ts) {
					t.Fatalf("key %s went to task %v in one run and %v in another", k, ts, second[k])
				}
			}
		})
	}
}

// fieldsMapping runs a fixed topology and returns key → task for 60 keys
// of several types.
func fieldsMapping(t *testing.T) map[string]int {
	var vals []gale.Values
	keyOf := map[int]string{}
	keys := []any{"apple", "", "a sentence longer than eight bytes", 0, -1, int64(1) << 40, 3.25, true, false}
	for i := range 51 {
		keys = append(keys, fmt.Sprintf("word%d", i))
	}
	for seq, k := range keys {
		vals = append(vals, gale.Values{seq, k})
		keyOf[seq] = fmt.Sprintf("%T:%v", k, k)
	}
	out := map[string]int{}
	for k, ts := range keyTasks(runGrouping(t, []string{"seq", "key"}, vals, gale.ByFields("key"), 7, 3), keyOf) {
		if len(ts) != 1 {
			t.Fatalf("key %s reached tasks %v, want one task", k, ts)
		}
		out[k] = ts[0]
	}
	return out
}

const childEnv = "GALE_TEST_FIELDS_CHILD"

// TestFieldsGroupingChildProcess is run by TestFieldsGroupingAcrossProcesses
// in a child process; on its own it does nothing.
func TestFieldsGroupingChildProcess(t *testing.T) {
	if os.Getenv(childEnv) != "1" {
		t.Skip("helper for TestFieldsGroupingAcrossProcesses")
	}
	data, err := json.Marshal(fieldsMapping(t))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("MAPPING %s\n", data)
}

// TestFieldsGroupingAcrossProcesses checks that a key goes to the same task
// in another process: workers of one topology must agree.
func TestFieldsGroupingAcrossProcesses(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		t.Skip("in the child")
	}
	here := fieldsMapping(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestFieldsGroupingChildProcess$", "-test.count=1")
	// atexit_sleep_ms=0: a -race binary otherwise sleeps 1s at exit.
	cmd.Env = append(os.Environ(), childEnv+"=1", "GORACE=atexit_sleep_ms=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child process: %v\n%s", err, out)
	}
	var there map[string]int
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MAPPING "); ok {
			if err := json.Unmarshal([]byte(rest), &there); err != nil {
				t.Fatal(err)
			}
		}
	}
	if there == nil {
		t.Fatalf("child printed no mapping:\n%s", out)
	}
	if len(there) != len(here) {
		t.Fatalf("child mapped %d keys, this process %d", len(there), len(here))
	}
	for k, task := range here {
		if there[k] != task {
			t.Errorf("key %s: task %d in this process, %d in another", k, task, there[k])
		}
	}
}

func TestDirectGrouping(t *testing.T) {
	const n = 40
	var prepared list[[]int]
	var emitErrs list[string]
	type badEmit struct {
		name string
		task int
		err  error
	}
	var bad list[badEmit]
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", func() gale.Spout {
		var targets, others []int
		return &funcSpout{
			declare: func(d gale.OutputDeclarer) {
				d.Declare("seq", "want")
				d.DeclareDirectStream("d", "seq", "want")
			},
			open: func(s *funcSpout) error {
				targets = s.tc.ComponentTasks("rec")
				others = s.tc.ComponentTasks("other")
				return nil
			},
			next: func(s *funcSpout) {
				if s.n < n {
					want := targets[s.n%len(targets)]
					got, err := s.Collector.EmitDirect(want, "d", s.n, s.n, want)
					if err != nil || !slices.Equal(got, []int{want}) {
						emitErrs.add(fmt.Sprintf("EmitDirect(%d) = %v, %v; want [%d], nil", want, got, err, want))
					}
					s.n++
					return
				}
				if s.n == n {
					s.n++
					for _, c := range []struct {
						name string
						task int
					}{
						{"own task", s.tc.TaskID()},
						{"task of a bolt not subscribed to d", others[0]},
						{"task 0", 0},
						{"negative task", -1},
						{"no such task", 99999},
					} {
						got, err := s.Collector.EmitDirect(c.task, "d", "bad "+c.name, -1, c.task)
						if got != nil {
							emitErrs.add(fmt.Sprintf("%s: EmitDirect returned tasks %v, want none", c.name, got))
						}
						bad.add(badEmit{c.name, c.task, err})
					}
				}
			},
		}
	}, 1)
	b.SetBolt("rec", recBolt(&prepared), 2).SetNumTasks(3).DirectGrouping("src", "d")
	b.SetBolt("other", func() gale.Bolt { return &funcBolt{} }, 1).ShuffleGrouping("src")
	res := complete(t, build(t, b), galetest.Options{})

	for _, e := range emitErrs.all() {
		t.Error(e)
	}
	if got := ints(res.Acked("src")); !slices.Equal(got, rangeInts(0, n)) {
		t.Errorf("acked %v, want 0..%d; failed %v", got, n-1, res.Failed("src"))
	}
	srcVals := res.Emitted("src", "d")
	want := map[int]int{}
	for _, v := range srcVals {
		want[v[0].(int)] = v[1].(int)
	}
	got := map[int][]int{}
	for _, v := range res.Emitted("rec") {
		got[v[1].(int)] = append(got[v[1].(int)], v[0].(int))
	}
	for seq := range n {
		if !slices.Equal(got[seq], []int{want[seq]}) {
			t.Errorf("tuple %d reached tasks %v, want exactly the named task %d", seq, got[seq], want[seq])
		}
	}
	bads := bad.all()
	if len(bads) != 5 {
		t.Fatalf("got %d bad emits, want 5", len(bads))
	}
	for _, be := range bads {
		t.Run(be.name, func(t *testing.T) {
			if !errors.Is(be.err, gale.ErrDirect) {
				t.Fatalf("got error %v, want one wrapping ErrDirect", be.err)
			}
			for _, s := range []string{`"src"`, `"d"`, fmt.Sprintf("task %d", be.task)} {
				if !strings.Contains(be.err.Error(), s) {
					t.Errorf("error %q does not name %s", be.err, s)
				}
			}
		})
	}
	if got := got[-1]; len(got) > 0 {
		t.Errorf("bad direct emits reached tasks %v", got)
	}
}

// pickGrouping sends seq%3==0 to the first task, 1 to the last, 2 to all;
// badSeq to a task that does not exist.
type pickGrouping struct {
	prepared *list[string]
	emitters *list[int]
	badSeq   int
	tasks    []int
}

func (g *pickGrouping) Prepare(component, stream string, targets []int) {
	g.tasks = slices.Clone(targets)
	g.prepared.add(fmt.Sprintf("%s:%s %v", component, stream, targets))
}

func (g *pickGrouping) ChooseTasks(task int, values []any) []int {
	g.emitters.add(task)
	seq := values[0].(int)
	switch {
	case seq == g.badSeq:
		return []int{g.tasks[len(g.tasks)-1] + 1000}
	case seq%3 == 0:
		return g.tasks[:1]
	case seq%3 == 1:
		return g.tasks[len(g.tasks)-1:]
	}
	return g.tasks
}

func TestCustomGrouping(t *testing.T) {
	const n = 30
	tests := []struct {
		name   string
		badSeq int
	}{
		{"choice honoured", -1},
		{"out-of-range choice is an error", 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var prepared, emitErrs list[string]
			var emitters, recTasks list[int]
			var ptasks list[[]int]
			b := gale.NewTopologyBuilder()
			var srcTask int
			b.SetSpout("src", func() gale.Spout {
				return &funcSpout{
					declare: func(d gale.OutputDeclarer) { d.Declare("seq") },
					open:    func(s *funcSpout) error { srcTask = s.tc.TaskID(); return nil },
					next: func(s *funcSpout) {
						if s.n < n {
							if _, err := s.Collector.Emit(s.n, s.n); err != nil {
								emitErrs.add(fmt.Sprintf("%d: %v", s.n, err))
							}
							s.n++
						}
					},
				}
			}, 1)
			b.SetBolt("rec", recBolt(&ptasks), 3).SetNumTasks(3).
				CustomGrouping("src", gale.DefaultStream, "pick", func() gale.CustomGrouping {
					return &pickGrouping{prepared: &prepared, emitters: &emitters, badSeq: tc.badSeq}
				})
			res := complete(t, build(t, b), galetest.Options{})
			for _, p := range ptasks.all() {
				recTasks.add(p[0])
			}
			tasks := recTasks.all()
			slices.Sort(tasks)
			if got, want := prepared.all(), []string{fmt.Sprintf("rec:default %v", tasks)}; !slices.Equal(got, want) {
				t.Errorf("Prepare calls %q, want %q (one per emitting task)", got, want)
			}
			for _, e := range emitters.all() {
				if e != srcTask {
					t.Fatalf("ChooseTasks got emitting task %d, want the spout's task %d", e, srcTask)
				}
			}
			got := map[int][]int{}
			for _, v := range res.Emitted("rec") {
				got[v[1].(int)] = append(got[v[1].(int)], v[0].(int))
			}
			for seq := range n {
				slices.Sort(got[seq])
				var want []int
				switch {
				case seq == tc.badSeq:
				case seq%3 == 0:
					want = tasks[:1]
				case seq%3 == 1:
					want = tasks[2:]
				default:
					want = tasks
				}
				if !slices.Equal(got[seq], want) {
					t.Errorf("tuple %d reached tasks %v, want %v", seq, got[seq], want)
				}
			}
			errs := emitErrs.all()
			if tc.badSeq < 0 {
				if len(errs) > 0 {
					t.Fatalf("emit errors %v, want none", errs)
				}
				return
			}
			if len(errs) != 1 || !strings.HasPrefix(errs[0], fmt.Sprintf("%d: ", tc.badSeq)) {
				t.Fatalf("emit errors %q, want one for tuple %d", errs, tc.badSeq)
			}
			for _, s := range []string{`"rec"`, fmt.Sprint(tasks[2] + 1000)} {
				if !strings.Contains(errs[0], s) {
					t.Errorf("error %q does not name %s", errs[0], s)
				}
			}
			if acked := ints(res.Acked("src")); slices.Contains(acked, tc.badSeq) || len(acked) != n-1 {
				t.Errorf("acked %v, want every id but %d (a rejected emit is not tracked)", acked, tc.badSeq)
			}
			if f := res.Failed("src"); len(f) > 0 {
				t.Errorf("failed %v, want none", f)
			}
		})
	}
}

// partialCandidates is the two tasks of tasks (ascending) that partial
// key grouping may send a one-field key to.
func partialCandidates(key string, tasks []int) []int {
	h := fieldhash.String(key)
	c := []int{tasks[fieldhash.Bucket(h, len(tasks))], tasks[fieldhash.Bucket(fieldhash.Second(h), len(tasks))]}
	slices.Sort(c)
	return slices.Compact(c)
}

// TestPartialKeyGrouping: as Storm's partialKeyGrouping, a key's tuples go
// only to its two candidate tasks, and a hot key's are split between both
// (the less loaded of the two each time), where a fields grouping would
// send them all to one task.
func TestPartialKeyGrouping(t *testing.T) {
	const tasks, hot = 8, "hot"
	var vals []gale.Values
	keyOf := map[int]string{}
	add := func(key string) {
		keyOf[len(vals)] = key
		vals = append(vals, gale.Values{len(vals), key})
	}
	for i := range 300 {
		add(hot)
		if i%3 == 0 {
			add(fmt.Sprintf("cold%d", i%40))
		}
	}
	run := runGrouping(t, []string{"seq", "key"}, vals, gale.PartialKey("key"), tasks, 3)
	if c := partialCandidates(hot, run.tasks); len(c) != 2 {
		t.Fatalf("the test's hot key %q has one candidate task %v; pick a key whose two hashes differ", hot, c)
	}
	for k, ts := range keyTasks(run, keyOf) {
		slices.Sort(ts)
		if c := partialCandidates(k, run.tasks); !isSubset(ts, c) {
			t.Errorf("key %s reached tasks %v, want only its candidates %v", k, ts, c)
		}
	}
	for seq, ts := range run.got {
		if len(ts) != 1 {
			t.Fatalf("tuple %d reached tasks %v, want exactly one", seq, ts)
		}
	}
	// One emitting task: each hot tuple went to the candidate it had sent
	// fewer tuples to, so the two are within the cold keys' share apart.
	c := partialCandidates(hot, run.tasks)
	perTask := map[int]int{}
	for seq, ts := range run.got {
		if keyOf[seq] == hot {
			perTask[ts[0]]++
		}
	}
	a, b := perTask[c[0]], perTask[c[1]]
	if a+b != 300 || a < 100 || b < 100 {
		t.Errorf("the hot key's 300 tuples went %d to task %d and %d to task %d; want both used, about evenly", a, c[0], b, c[1])
	}
}

// isSubset reports whether every element of a is in b.
func isSubset(a, b []int) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// TestPartialKeyGroupingValidated: a partial key grouping must name
// fields the stream declares, as a fields grouping must.
func TestPartialKeyGroupingValidated(t *testing.T) {
	for _, tc := range []struct {
		fields []string
		want   string
	}{
		{nil, `bolt "b": partial key grouping on s:default names no fields`},
		{[]string{"nope"}, `bolt "b" groups s:default by field "nope", which the stream does not declare (fields: [seq key])`},
	} {
		b := gale.NewTopologyBuilder()
		b.SetSpout("s", func() gale.Spout { return &galetest.FixedSpout{Fields: []string{"seq", "key"}} }, 1)
		b.SetBolt("b", recBolt(&list[[]int]{}), 2).PartialKeyGrouping("s", tc.fields...)
		if _, err := b.Build(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("fields %v: Build error %v, want %q", tc.fields, err, tc.want)
		}
	}
}
