// Package workermem sets how a worker process's Go runtime manages
// memory, from the cluster's worker settings in gale.yaml: its GC percent
// (worker.gogc), its memory limit (worker.heap.memory.mb), a heap floor
// (worker.gc.floor.mb) and a pretouch of that floor at start
// (worker.heap.pretouch). The root package registers and validates the
// keys (a topology may not set them); this package reads them from an
// effective configuration and applies them to the process.
//
// A worker process applies its settings once, at start (Settings.Apply);
// RunLocal never does, so a topology run inside another program leaves
// that program's GC alone. The bench applies them to the process it
// measures, as a worker would.
package workermem

import (
	"os"
	goruntime "runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"

	"github.com/gale-stream/gale/internal/config"
)

// The worker settings' keys, cluster keys of gale.yaml (internal/config's
// registry holds their types, defaults and documentation).
const (
	// KeyGOGC is the GC percent of a worker process (int, default 400;
	// GOGCOff or ≥ 25).
	KeyGOGC = config.WorkerGOGC
	// KeyGCFloorMB is the least heap, in MiB, a worker grows to before it
	// collects, however little is live (int, default 64, ≥ 0; 0 = none).
	KeyGCFloorMB = config.WorkerGCFloorMB
	// KeyHeapPretouch has a worker fault in its GC floor's worth of heap,
	// and a quarter more, when it starts (bool, default true).
	KeyHeapPretouch = config.WorkerHeapPretouch
	// KeyHeapMemoryMB is Storm's heap budget of a worker, its Go memory
	// limit (int, default 768, ≥ 64).
	KeyHeapMemoryMB = config.WorkerHeapMemoryMB
)

// GOGCOff is the value of KeyGOGC that turns proportional collection off,
// as GOGC=off does: the worker collects when its heap nears its memory
// limit.
const GOGCOff = -1

// Settings are how a worker process's Go runtime manages memory.
type Settings struct {
	GCPercent  int   // GOGC: GOGCOff, or a percent ≥ 25 (KeyGOGC)
	LimitBytes int64 // GOMEMLIMIT, from the heap budget (KeyHeapMemoryMB)
	// FloorBytes is the least heap the worker grows to before it collects,
	// however little is live (KeyGCFloorMB); 0 = none.
	FloorBytes int64
	// Pretouch has Apply fault in FloorBytes of heap, and a quarter more,
	// before it returns (KeyHeapPretouch).
	Pretouch bool
}

// Of reads a worker's memory settings from its effective configuration.
func Of(e *config.Effective) Settings {
	gogc, _ := e.Int(KeyGOGC)
	mb, _ := e.Int(KeyHeapMemoryMB)
	floor, _ := e.Int(KeyGCFloorMB)
	return Settings{GCPercent: gogc, LimitBytes: int64(mb) << 20, FloorBytes: int64(floor) << 20,
		Pretouch: e.Bool(KeyHeapPretouch)}
}

// Apply sets this process's GC percent and memory limit, keeps the heap
// floor, pretouches it if asked, and returns a function that stops that
// and restores the previous settings. It is meant to be called once, at
// the start of a process; the floor it keeps is process-wide.
func (m Settings) Apply() (restore func()) { return m.apply(nil) }

// apply is Apply; onAdjust, if set, is called after each adjustment of
// the floor, under its lock, with the collection whose live heap it was
// made for (counting from the process's start) and the GC percent set.
func (m Settings) apply(onAdjust func(cycle, live uint64, percent int)) (restore func()) {
	oldPercent := debug.SetGCPercent(m.GCPercent)
	oldLimit := debug.SetMemoryLimit(m.LimitBytes)
	if m.Pretouch && m.FloorBytes > 0 {
		pretouch(m.FloorBytes, m.LimitBytes)
	}
	var f *gcFloor
	if m.FloorBytes > 0 && m.GCPercent != GOGCOff {
		f = &gcFloor{base: m.GCPercent, floor: uint64(m.FloorBytes), percent: m.GCPercent,
			sample:   []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}},
			onAdjust: onAdjust}
		f.adjust()
		f.arm()
	}
	return func() {
		if f != nil {
			f.stop()
		}
		debug.SetGCPercent(oldPercent)
		debug.SetMemoryLimit(oldLimit)
	}
}

// pretouch makes the runtime take a floor's worth of heap from the OS,
// and a quarter more, and fault every page of it in, then frees it all
// with a collection: the pages stay mapped, and the heap's growth up to
// the floor reuses them instead of faulting new ones in. A fresh worker
// otherwise takes a page fault for every 4 KiB its heap grows by until
// its first collection at the floor: at 340k sentences/s in two workers,
// 3,400 faults per 100 ms each for the first 0.7 s, against about 40
// pretouched, and the first second's p99 complete latency was 10.7 ms
// against 5.0 ms pretouched (medians of 8 pairs; docs/performance.md,
// "The first second"). The quarter more covers what the heap holds
// besides its objects when it reaches the floor; the floor alone left
// faults for its last 100 ms. The JVM's -XX:+AlwaysPreTouch does the
// same for its heap.
//
// What costs is the fault per 4 KiB page, not the write: on a virtual
// machine a fault taken from user space costs about 15 µs, 0.3 s of CPU
// for the default 80 MiB (BenchmarkApply). madvise(MADV_POPULATE_WRITE)
// takes the same faults in the kernel for a ninth of that, but the first
// second's p99 complete latency then stayed at 10–25 ms against 1.4–2.7 ms
// with a write per page (in one process at 200k sentences/s), so the
// pretouch writes.
//
// Collection is off while it allocates, so that the one collection at the
// end is the only one, and the floor's GC percent is set after it, from
// the small live heap it leaves. It touches at most half the memory limit,
// which would otherwise collect all along.
func pretouch(floor, limit int64) {
	n := floor + floor/4
	if limit > 0 {
		n = min(n, limit/2)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(GOGCOff))
	const chunk = 1 << 20
	page := int64(os.Getpagesize())
	chunks := make([][]byte, 0, n/chunk+1)
	for done := int64(0); done < n; done += chunk {
		b := make([]byte, chunk)
		for i := int64(0); i < chunk; i += page {
			b[i] = 1 // fresh pages come zeroed from the OS: the runtime does not write them
		}
		chunks = append(chunks, b)
	}
	goruntime.KeepAlive(chunks)
	chunks = nil
	goruntime.GC()
}

// gcFloor keeps the heap goal at least floor: after every collection it
// sets the GC percent from the live heap. Go's heap goal is the larger of
// live·(1+GOGC/100) and 4 MiB·GOGC/100 (the minimum heap scales with GOGC,
// as the Go GC guide documents), so
//
//   - live ≤ 4 MiB: GOGC = floor/4 MiB·100 makes the minimum heap the floor;
//   - live > 4 MiB: GOGC = (floor/live − 1)·100 makes the proportional goal
//     the floor;
//
// and never below the configured percent, which governs once
// live·(1+GOGC/100) passes the floor. Unlike a higher fixed GOGC, the
// overhead stays at most max(floor, the configured proportion) as the live
// heap grows.
type gcFloor struct {
	mu      sync.Mutex
	stopped bool
	base    int    // the configured GC percent
	floor   uint64 // bytes
	percent int    // as last set
	sample  []metrics.Sample

	onAdjust func(cycle, live uint64, percent int) // tests: see apply
}

// minHeap is the Go runtime's minimum heap goal at GOGC=100.
const minHeap = 4 << 20

// floorPercent is the GC percent that makes the heap goal
// max(floor, live·(1+base/100)).
func floorPercent(base int, floor, live uint64) int {
	var p uint64
	if live <= minHeap {
		p = floor * 100 / minHeap
	} else {
		p = floor*100/live - min(100, floor*100/live)
	}
	return max(base, int(min(p, 1<<30)))
}

func (f *gcFloor) adjust() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	metrics.Read(f.sample)
	if f.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	live := f.sample[0].Value.Uint64()
	if p := floorPercent(f.base, f.floor, live); p != f.percent {
		debug.SetGCPercent(p)
		f.percent = p
	}
	if f.onAdjust != nil {
		f.onAdjust(f.sample[1].Value.Uint64(), live, f.percent)
	}
}

// gcSentinel is garbage whose finalizer runs after each collection. It
// holds a pointer and is larger than the tiny allocator's 16 bytes, so it
// is an object of its own and the finalizer does run.
type gcSentinel struct {
	f   *gcFloor
	pad [24]byte
}

// arm sets up the next adjustment, after the next collection.
func (f *gcFloor) arm() {
	s := &gcSentinel{f: f}
	goruntime.SetFinalizer(s, func(s *gcSentinel) {
		s.f.adjust()
		s.f.mu.Lock()
		stopped := s.f.stopped
		s.f.mu.Unlock()
		if !stopped {
			s.f.arm()
		}
	})
}

func (f *gcFloor) stop() {
	f.mu.Lock()
	f.stopped = true
	f.mu.Unlock()
}
