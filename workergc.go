package gale

import "runtime/debug"

// GOGCOff is the value of TopologyWorkerGOGC that turns proportional
// collection off, as GOGC=off does: the worker collects when its heap nears
// WorkerHeapMemoryMB.
const GOGCOff = -1

// WorkerMemory is how a worker process's Go runtime manages memory.
type WorkerMemory struct {
	GCPercent  int   // GOGC: GOGCOff, or a percent ≥ 25
	LimitBytes int64 // GOMEMLIMIT, from the heap budget
}

// WorkerMemoryOf reads a worker's memory settings from its effective
// configuration (TopologyWorkerGOGC and WorkerHeapMemoryMB).
func WorkerMemoryOf(e *Effective) WorkerMemory {
	gogc, _ := e.Int(TopologyWorkerGOGC)
	mb, _ := e.Int(WorkerHeapMemoryMB)
	return WorkerMemory{GCPercent: gogc, LimitBytes: int64(mb) << 20}
}

// Apply sets this process's GC percent and memory limit and returns a
// function that restores the previous ones. A worker process applies its
// settings once at start; RunLocal never does, so a topology run inside
// another program leaves that program's GC alone.
func (m WorkerMemory) Apply() (restore func()) {
	oldPercent := debug.SetGCPercent(m.GCPercent)
	oldLimit := debug.SetMemoryLimit(m.LimitBytes)
	return func() {
		debug.SetGCPercent(oldPercent)
		debug.SetMemoryLimit(oldLimit)
	}
}
