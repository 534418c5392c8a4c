package galetest_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
	"github.com/gale-stream/gale/internal/fieldhash"
)

// The partial key grouping across workers: spout "keys" (2 tasks) emits
// pkHot tuples of the key "hot" and pkCold of 20 others, split between
// its tasks; bolt "count" (4 tasks) takes them by partial key grouping
// and records which task got which key.
const partialKey = "galetest-partial-key"

const pkHot, pkCold = 400, 100

func init() {
	galetest.RegisterTopology(partialKey, func(json.RawMessage) (*gale.Topology, gale.Config, func() any, error) {
		seen := &keyTasks{by: map[string]int{}}
		topo, err := partialKeyTopology(seen)
		return topo, nil, seen.snapshot, err
	})
}

// keyTasks counts the tuples each task got, by "task key", and keeps the
// bolt's task ids as its context gives them.
type keyTasks struct {
	mu    sync.Mutex
	by    map[string]int
	tasks []int
}

// pkStats is what a worker reports.
type pkStats struct {
	By    map[string]int `json:"by"`
	Tasks []int          `json:"tasks"`
}

func (k *keyTasks) add(task int, key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.by[fmt.Sprintf("%d %s", task, key)]++
}

func (k *keyTasks) snapshot() any {
	k.mu.Lock()
	defer k.mu.Unlock()
	return pkStats{By: maps.Clone(k.by), Tasks: k.tasks}
}

func partialKeyTopology(seen *keyTasks) (*gale.Topology, error) {
	var vals []gale.Values
	for i := range pkHot + pkCold {
		key := "hot"
		if i%5 == 4 {
			key = fmt.Sprintf("cold%d", i%20)
		}
		vals = append(vals, gale.Values{key})
	}
	b := gale.NewTopologyBuilder()
	b.SetSpout("keys", func() gale.Spout { return &galetest.FixedSpout{Fields: []string{"key"}, Values: vals} }, 2)
	b.SetBolt("count", func() gale.Bolt { return &taskBolt{seen: seen} }, 4).PartialKeyGrouping("keys", "key")
	return b.Build()
}

// taskBolt records its task id and each input's key, and acks.
type taskBolt struct {
	bolt
	seen *keyTasks
	task int
}

func (b *taskBolt) Prepare(tc *gale.TopologyContext, c *gale.BoltCollector) error {
	b.task = tc.TaskID()
	b.seen.mu.Lock()
	b.seen.tasks = tc.ComponentTasks("count")
	b.seen.mu.Unlock()
	return b.bolt.Prepare(tc, c)
}

func (b *taskBolt) Execute(in *gale.Tuple) {
	b.seen.add(b.task, in.GetString(0))
	b.Collector.Ack(in)
}

// TestWorkersPartialKeyGrouping: across 3 worker processes, where the
// spout's tasks and the bolt's sit in different workers, each key reaches
// only its two candidate tasks, the same in every worker, and the hot
// key reaches both.
func TestWorkersPartialKeyGrouping(t *testing.T) {
	w := galetest.StartWorkers(t, partialKey, 3, galetest.WorkersOptions{})
	got := map[string]int{}
	var tasks []int
	w.WaitFor("every tuple counted", 20*time.Second, func() bool {
		clear(got)
		total := 0
		for i := range 3 {
			var st pkStats
			if w.Stats(i, &st) == nil {
				for k, n := range st.By {
					got[k] += n
					total += n
				}
				if st.Tasks != nil {
					tasks = st.Tasks
				}
			}
		}
		return total == pkHot+pkCold
	})
	if err := w.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if len(tasks) != 4 {
		t.Fatalf("the bolt's tasks %v, want 4", tasks)
	}
	crossed := int64(0)
	for i := range 3 {
		crossed += w.Status(i).WireTuplesSent
	}
	if crossed == 0 {
		t.Errorf("no tuple crossed between workers; the test wants the spout's and the bolt's tasks apart")
	}
	byKey := map[string][]int{}
	hot := map[int]int{}
	for k, n := range got {
		var task int
		var key string
		if _, err := fmt.Sscanf(k, "%d %s", &task, &key); err != nil {
			t.Fatal(err)
		}
		byKey[key] = append(byKey[key], task)
		if key == "hot" {
			hot[task] += n
		}
	}
	for key, ts := range byKey {
		h := fieldhash.String(key)
		c := []int{tasks[fieldhash.Bucket(h, len(tasks))], tasks[fieldhash.Bucket(fieldhash.Second(h), len(tasks))]}
		for _, task := range ts {
			if !slices.Contains(c, task) {
				t.Errorf("key %s reached tasks %v, want only its candidates %v", key, ts, c)
			}
		}
	}
	if len(hot) != 2 {
		t.Errorf("the hot key reached tasks %v, want both its candidates", hot)
	}
}
