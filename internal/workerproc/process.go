package workerproc

import (
	"math"
	"runtime/metrics"
	"sync"

	"github.com/gale-stream/gale/internal/procstat"
)

// Process is a worker process's own use of the machine since it started,
// sent in its heartbeats (Message.Process): its CPU time, user and
// system; its heap in use; its garbage collections and their total
// pause; its goroutines now; and the port of its own Prometheus /metrics
// (0: none). The bytes it received from and sent to its peers are in
// the heartbeat's Status (WireBytesReceived, WireBytesSent).
type Process struct {
	CPUSeconds   float64 `json:"cpu_seconds"`
	HeapBytes    int64   `json:"heap_bytes"`
	GCCount      int64   `json:"gc_count"`
	GCPauseNanos int64   `json:"gc_pause_nanos"`
	Goroutines   int     `json:"goroutines"`
	MetricsPort  int     `json:"metrics_port,omitempty"`
}

// The runtime/metrics this reads: none stops the world.
const (
	metricHeapObjects = "/memory/classes/heap/objects:bytes"
	metricHeapUnused  = "/memory/classes/heap/unused:bytes"
	metricGCCycles    = "/gc/cycles/total:gc-cycles"
	metricGCPauses    = "/sched/pauses/total/gc:seconds"
	metricGoroutines  = "/sched/goroutines:goroutines"
	metricCPUTotal    = "/cpu/classes/total:cpu-seconds"
	metricCPUIdle     = "/cpu/classes/idle:cpu-seconds"
)

// processReader reads this process's Process. Safe for concurrent use.
type processReader struct {
	mu      sync.Mutex
	samples []metrics.Sample
}

func newProcessReader() *processReader {
	names := []string{metricHeapObjects, metricHeapUnused, metricGCCycles, metricGCPauses, metricGoroutines, metricCPUTotal, metricCPUIdle}
	r := &processReader{samples: make([]metrics.Sample, len(names))}
	for i, n := range names {
		r.samples[i].Name = n
	}
	return r
}

// read returns the process's use now. The CPU time is the kernel's
// (getrusage) on unix, else the Go runtime's estimate of the time its
// threads were not idle, updated at each collection. The GC pause
// is the sum of the runtime's histogram of pauses, each counted at the
// middle of its bucket (buckets are a few percent wide).
func (r *processReader) read() Process {
	r.mu.Lock()
	defer r.mu.Unlock()
	metrics.Read(r.samples)
	var p Process
	var cpuTotal, cpuIdle float64
	for _, s := range r.samples {
		switch s.Name {
		case metricHeapObjects, metricHeapUnused:
			p.HeapBytes += int64(uint64Value(s.Value))
		case metricGCCycles:
			p.GCCount = int64(uint64Value(s.Value))
		case metricGCPauses:
			if s.Value.Kind() == metrics.KindFloat64Histogram {
				p.GCPauseNanos = int64(histogramSum(s.Value.Float64Histogram()) * 1e9)
			}
		case metricGoroutines:
			p.Goroutines = int(uint64Value(s.Value))
		case metricCPUTotal:
			cpuTotal = floatValue(s.Value)
		case metricCPUIdle:
			cpuIdle = floatValue(s.Value)
		}
	}
	if u, err := procstat.SelfUsage(); err == nil {
		p.CPUSeconds = u.CPU.Seconds()
	} else {
		p.CPUSeconds = max(cpuTotal-cpuIdle, 0)
	}
	return p
}

func uint64Value(v metrics.Value) uint64 {
	if v.Kind() != metrics.KindUint64 {
		return 0 // a metric this Go does not have
	}
	return v.Uint64()
}

func floatValue(v metrics.Value) float64 {
	if v.Kind() != metrics.KindFloat64 {
		return 0
	}
	return v.Float64()
}

// histogramSum is the sum of a histogram's values, each counted at the
// middle of its bucket (at the finite bound of an open-ended one).
func histogramSum(h *metrics.Float64Histogram) float64 {
	var sum float64
	for i, n := range h.Counts {
		if n == 0 {
			continue
		}
		lo, hi := h.Buckets[i], h.Buckets[i+1]
		var mid float64
		switch {
		case math.IsInf(lo, -1):
			mid = hi
		case math.IsInf(hi, 1):
			mid = lo
		default:
			mid = (lo + hi) / 2
		}
		sum += float64(n) * mid
	}
	return sum
}
