package workerproc

import (
	"runtime"
	"testing"
)

// The process's counters read the runtime: a forced collection counts,
// with its pause; the heap and the goroutines are there.
func TestProcessReader(t *testing.T) {
	r := newProcessReader()
	before := r.read()
	runtime.GC()
	after := r.read()
	if after.GCCount < before.GCCount+1 {
		t.Errorf("GC count %d after a forced collection, %d before: want at least one more", after.GCCount, before.GCCount)
	}
	if after.GCPauseNanos <= before.GCPauseNanos {
		t.Errorf("GC pause %d ns after a forced collection, %d ns before: want more", after.GCPauseNanos, before.GCPauseNanos)
	}
	if after.HeapBytes <= 0 || after.Goroutines <= 0 || after.CPUSeconds <= 0 {
		t.Errorf("heap %d bytes, %d goroutines, %v s CPU: want each > 0", after.HeapBytes, after.Goroutines, after.CPUSeconds)
	}
}
