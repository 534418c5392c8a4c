package gale

import (
	"errors"
	goruntime "runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestWorkerMemoryOf(t *testing.T) {
	tests := []struct {
		name           string
		file, topology Config
		want           WorkerMemory
	}{
		{"defaults: GOGC 400 above a pretouched 64 MiB floor within Storm's 768 MiB", nil, nil,
			WorkerMemory{GCPercent: 400, LimitBytes: 768 << 20, FloorBytes: 64 << 20, Pretouch: true}},
		{"gale.yaml sets the budget", Config{WorkerHeapMemoryMB: 2048}, nil,
			WorkerMemory{GCPercent: 400, LimitBytes: 2048 << 20, FloorBytes: 64 << 20, Pretouch: true}},
		{"topology turns proportional GC off", nil, Config{TopologyWorkerGOGC: GOGCOff},
			WorkerMemory{GCPercent: GOGCOff, LimitBytes: 768 << 20, FloorBytes: 64 << 20, Pretouch: true}},
		{"topology sets no floor", nil, Config{TopologyWorkerGCFloorMB: 0},
			WorkerMemory{GCPercent: 400, LimitBytes: 768 << 20, Pretouch: true}},
		{"topology does not pretouch", nil, Config{TopologyWorkerHeapPretouch: false},
			WorkerMemory{GCPercent: 400, LimitBytes: 768 << 20, FloorBytes: 64 << 20}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := ResolveConfig(tt.file, tt.topology)
			if err != nil {
				t.Fatal(err)
			}
			if got := WorkerMemoryOf(e); got != tt.want {
				t.Errorf("WorkerMemoryOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestWorkerMemoryRejects(t *testing.T) {
	tests := []struct {
		name           string
		file, topology Config
		want           error
	}{
		{"gogc below 25", nil, Config{TopologyWorkerGOGC: 10}, ErrOutOfRange},
		{"gogc -2", nil, Config{TopologyWorkerGOGC: -2}, ErrOutOfRange},
		{"budget below 64 MiB", Config{WorkerHeapMemoryMB: 32}, nil, ErrOutOfRange},
		{"negative floor", nil, Config{TopologyWorkerGCFloorMB: -1}, ErrOutOfRange},
		{"budget set by a topology", nil, Config{WorkerHeapMemoryMB: 1024}, ErrForbiddenOverride},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ResolveConfig(tt.file, tt.topology)
			if !errors.Is(err, tt.want) {
				t.Errorf("ResolveConfig = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestWorkerMemoryApply(t *testing.T) {
	prevPercent := debug.SetGCPercent(100)
	debug.SetGCPercent(prevPercent)
	prevLimit := debug.SetMemoryLimit(-1)

	restore := WorkerMemory{GCPercent: GOGCOff, LimitBytes: 256 << 20}.Apply()
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

// TestWorkerGCFloor follows the floor through collections as the live heap
// changes: 24 MiB live puts five times that above the 64 MiB floor and GOGC
// 400 governs; with almost nothing live the goal is the floor; live again,
// GOGC governs again. After restore the floor no longer touches the GC
// percent.
func TestWorkerGCFloor(t *testing.T) {
	const mib = 1 << 20
	read := func(name string) uint64 {
		s := []metrics.Sample{{Name: name}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	goal := func() uint64 { return read("/gc/heap/goal:bytes") }
	// The floor is kept by a finalizer after each collection: wait for it.
	waitGoal := func(what string, ok func(g uint64) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for g := goal(); !ok(g); g = goal() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: heap goal %d MiB (live %d MiB)", what, g/mib, read("/gc/heap/live:bytes")/mib)
			}
			goruntime.Gosched()
		}
	}
	var hold [][]byte
	holdLive := func() {
		for range 24 {
			hold = append(hold, make([]byte, mib))
		}
		goruntime.GC()
	}
	prev := debug.SetGCPercent(100)
	debug.SetGCPercent(prev)

	holdLive()
	restore := WorkerMemory{GCPercent: 400, LimitBytes: 768 * mib, FloorBytes: 64 * mib}.Apply()
	defer func() {
		if restore != nil {
			restore()
		}
	}()
	waitGoal("24 MiB live at Apply: want GOGC 400's 5×live, above the floor", func(g uint64) bool {
		return g >= 5*24*mib && g < 8*24*mib
	})
	goruntime.KeepAlive(hold)
	hold = nil
	goruntime.GC()
	waitGoal("almost nothing live: want the 64 MiB floor", func(g uint64) bool {
		return g >= 64*mib*95/100 && g < 80*mib
	})
	holdLive()
	waitGoal("24 MiB live again: want 5×live, not a floor-sized percent times live", func(g uint64) bool {
		return g >= 5*24*mib && g < 8*24*mib
	})
	goruntime.KeepAlive(hold)

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
