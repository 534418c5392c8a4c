package workermem

import (
	"errors"
	goruntime "runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/config"
)

func TestOf(t *testing.T) {
	tests := []struct {
		name string
		file gale.Config
		want Settings
	}{
		{"defaults: GOGC 400 above a pretouched 64 MiB floor within Storm's 768 MiB", nil,
			Settings{GCPercent: 400, LimitBytes: 768 << 20, FloorBytes: 64 << 20, Pretouch: true}},
		{"gale.yaml sets the budget", gale.Config{KeyHeapMemoryMB: 2048},
			Settings{GCPercent: 400, LimitBytes: 2048 << 20, FloorBytes: 64 << 20, Pretouch: true}},
		{"gale.yaml turns proportional GC off", gale.Config{KeyGOGC: GOGCOff},
			Settings{GCPercent: GOGCOff, LimitBytes: 768 << 20, FloorBytes: 64 << 20, Pretouch: true}},
		{"gale.yaml sets no floor", gale.Config{KeyGCFloorMB: 0},
			Settings{GCPercent: 400, LimitBytes: 768 << 20, Pretouch: true}},
		{"gale.yaml does not pretouch", gale.Config{KeyHeapPretouch: false},
			Settings{GCPercent: 400, LimitBytes: 768 << 20, FloorBytes: 64 << 20}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := config.Resolve(tt.file, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := Of(e); got != tt.want {
				t.Errorf("Of = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestKeysAreClusterSettings: a worker's memory is the cluster's to set,
// in gale.yaml; a topology that sets one of the keys, or one of their old
// topology.worker.* names, is refused with an error naming the key and
// where it goes.
func TestKeysAreClusterSettings(t *testing.T) {
	tests := []struct {
		name     string
		topology gale.Config
		is       error
		want     string
	}{
		{"gogc", gale.Config{KeyGOGC: 300}, gale.ErrForbiddenOverride,
			`config: "worker.gogc" may not be set in topology config (only topology.* keys may; set it in gale.yaml)`},
		{"floor", gale.Config{KeyGCFloorMB: 0}, gale.ErrForbiddenOverride,
			`config: "worker.gc.floor.mb" may not be set in topology config (only topology.* keys may; set it in gale.yaml)`},
		{"pretouch", gale.Config{KeyHeapPretouch: false}, gale.ErrForbiddenOverride,
			`config: "worker.heap.pretouch" may not be set in topology config (only topology.* keys may; set it in gale.yaml)`},
		{"budget", gale.Config{KeyHeapMemoryMB: 1024}, gale.ErrForbiddenOverride,
			`config: "worker.heap.memory.mb" may not be set in topology config (only topology.* keys may; set it in gale.yaml)`},
		{"old gogc name", gale.Config{"topology.worker.gogc": 300}, gale.ErrUnknownKey,
			`config: unknown key "topology.worker.gogc" in topology config (did you mean "worker.gogc"? it is a cluster setting, set in gale.yaml)`},
		{"old floor name", gale.Config{"topology.worker.gc.floor.mb": 0}, gale.ErrUnknownKey,
			`config: unknown key "topology.worker.gc.floor.mb" in topology config (did you mean "worker.gc.floor.mb"? it is a cluster setting, set in gale.yaml)`},
		{"old pretouch name", gale.Config{"topology.worker.heap.pretouch": false}, gale.ErrUnknownKey,
			`config: unknown key "topology.worker.heap.pretouch" in topology config (did you mean "worker.heap.pretouch"? it is a cluster setting, set in gale.yaml)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Resolve(nil, tt.topology)
			if !errors.Is(err, tt.is) || err.Error() != tt.want {
				t.Errorf("ResolveConfig(nil, %v):\n got %v\nwant %s (%v)", tt.topology, err, tt.want, tt.is)
			}
		})
	}
}

func TestRejects(t *testing.T) {
	tests := []struct {
		name string
		file gale.Config
		want string
	}{
		{"gogc below 25", gale.Config{KeyGOGC: 10}, `"worker.gogc" in gale.yaml must be -1 (off) or ≥ 25, got 10`},
		{"gogc -2", gale.Config{KeyGOGC: -2}, `"worker.gogc" in gale.yaml must be -1 (off) or ≥ 25, got -2`},
		{"budget below 64 MiB", gale.Config{KeyHeapMemoryMB: 32}, `"worker.heap.memory.mb" in gale.yaml must be ≥ 64, got 32`},
		{"negative floor", gale.Config{KeyGCFloorMB: -1}, `"worker.gc.floor.mb" in gale.yaml must be ≥ 0, got -1`},
		{"pretouch not a bool", gale.Config{KeyHeapPretouch: "yes"}, `"worker.heap.pretouch" in gale.yaml must be a boolean`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Resolve(tt.file, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ResolveConfig(%v, nil) = %v, want an error containing %s", tt.file, err, tt.want)
			}
		})
	}
}

func TestApply(t *testing.T) {
	prevPercent := debug.SetGCPercent(100)
	debug.SetGCPercent(prevPercent)
	prevLimit := debug.SetMemoryLimit(-1)

	restore := Settings{GCPercent: GOGCOff, LimitBytes: 256 << 20}.Apply()
	percent := debug.SetGCPercent(GOGCOff)
	limit := debug.SetMemoryLimit(-1)
	restore()
	if percent != GOGCOff || limit != 256<<20 {
		t.Errorf("after Apply: GC percent %d, memory limit %d; want off (%d) and %d", percent, limit, GOGCOff, 256<<20)
	}
	afterPercent := debug.SetGCPercent(prevPercent)
	if afterLimit := debug.SetMemoryLimit(-1); afterPercent != prevPercent || afterLimit != prevLimit {
		t.Errorf("after restore: GC percent %d, memory limit %d; want %d and %d", afterPercent, afterLimit, prevPercent, prevLimit)
	}
}

func TestFloorPercent(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name        string
		base        int
		floor, live uint64
		want        int
	}{
		{"nothing live yet: the minimum heap is the floor", 400, 64 * mib, 0, 1600},
		{"small live heap: the minimum heap is the floor", 400, 64 * mib, 1 * mib, 1600},
		{"at the minimum heap's scale", 400, 64 * mib, 4 * mib, 1600},
		{"8 MiB live: grow to the floor", 400, 64 * mib, 8 * mib, 700},
		{"live·5 reaches the floor: GOGC governs", 400, 64 * mib, 64 * mib / 5, 400},
		{"large live heap: GOGC governs", 400, 64 * mib, 200 * mib, 400},
		{"live above the floor", 400, 64 * mib, 100 * mib, 400},
		{"a higher configured percent wins", 3200, 64 * mib, 1 * mib, 3200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := floorPercent(tt.base, tt.floor, tt.live); got != tt.want {
				t.Errorf("floorPercent(%d, %d MiB, %.1f MiB) = %d, want %d",
					tt.base, tt.floor/mib, float64(tt.live)/mib, got, tt.want)
			}
		})
	}
}

// garbage is where gcCycles puts what it allocates, so that the compiler
// cannot keep it on the stack.
var garbage []byte

// gcCycles allocates n bytes of garbage in 64 KiB slices and returns how
// many collections completed meanwhile.
func gcCycles(n int64) uint64 {
	before := gcCount()
	const size = 64 << 10
	for done := int64(0); done < n; done += size {
		garbage = make([]byte, size)
	}
	garbage = nil
	return gcCount() - before
}

func gcCount() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestGCFloor follows the floor through collections as the live heap
// changes, and checks the heap goal it keeps by what the collector does
// when the heap grows: Go's pacer starts a collection when the heap has
// grown at least 70% and at most 95% of the way from the live heap to the
// goal, so growing 60% of the way collects nothing, and growing twice the
// way more collects at least once.
//
//   - With almost nothing live the goal is the 64 MiB floor: GOGC 400
//     alone would collect at 16 MiB.
//   - With 24 MiB live, five times that is above the floor and GOGC 400
//     governs: the floor's percent for a small heap would collect at
//     400 MiB, not at 120.
//   - With the 24 MiB released, the floor governs again.
//
// After restore the floor no longer touches the GC percent.
func TestGCFloor(t *testing.T) {
	const mib = 1 << 20
	const floor = 64 * mib
	var mu sync.Mutex
	var lastCycle, lastLive uint64
	onAdjust := func(cycle, live uint64, _ int) {
		mu.Lock()
		lastCycle, lastLive = cycle, live
		mu.Unlock()
	}
	// collect runs a collection and waits until the floor has adjusted
	// for it, which a finalizer does after the collection; it returns the
	// live heap.
	collect := func(what string) uint64 {
		t.Helper()
		c0 := gcCount()
		deadline := time.Now().Add(time.Minute)
		for {
			goruntime.GC()
			mu.Lock()
			cycle, live := lastCycle, lastLive
			mu.Unlock()
			if cycle > c0 {
				return live
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the floor did not adjust after a minute of collections", what)
			}
			goruntime.Gosched()
		}
	}
	check := func(what string, live uint64, want int64) {
		t.Helper()
		s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
		metrics.Read(s)
		way := want - int64(live)
		t.Logf("%s: %.1f MiB live, the runtime's heap goal %.1f MiB, want %d MiB", what,
			float64(live)/mib, float64(s[0].Value.Uint64())/mib, want/mib)
		if n := gcCycles(way * 6 / 10); n != 0 {
			t.Errorf("%s: %d collections as the heap grew by %d MiB, want none below a heap goal of %d MiB",
				what, n, way*6/10/mib, want/mib)
		}
		if n := gcCycles(way * 2); n == 0 {
			t.Errorf("%s: no collection as the heap grew by %d MiB more, want one at a heap goal of %d MiB",
				what, way*2/mib, want/mib)
		}
	}
	prev := debug.SetGCPercent(100)
	debug.SetGCPercent(prev)
	goruntime.GC()

	restore := Settings{GCPercent: 400, LimitBytes: 768 * mib, FloorBytes: floor}.apply(onAdjust)
	defer func() {
		if restore != nil {
			restore()
		}
	}()
	// Apply adjusts the floor at once, for the collection just run.
	mu.Lock()
	live := lastLive
	mu.Unlock()
	check("almost nothing live", live, floor)

	var hold [][]byte
	for range 24 {
		hold = append(hold, make([]byte, mib))
	}
	live = collect("24 MiB held")
	check("24 MiB live", live, 5*int64(live))
	goruntime.KeepAlive(hold)
	hold = nil

	live = collect("24 MiB released")
	check("released again", live, floor)

	restore()
	restore = nil
	// A finalizer armed before restore may still run: it must leave the
	// restored percent alone.
	goruntime.GC()
	goruntime.GC()
	if got := debug.SetGCPercent(prev); got != prev {
		t.Errorf("collections after restore changed the GC percent to %d, want %d", got, prev)
	}
}
