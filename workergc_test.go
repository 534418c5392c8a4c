package gale

import (
	"errors"
	"runtime/debug"
	"testing"
)

func TestWorkerMemoryOf(t *testing.T) {
	tests := []struct {
		name           string
		file, topology Config
		want           WorkerMemory
	}{
		{"defaults: GOGC 400 within Storm's 768 MiB", nil, nil, WorkerMemory{GCPercent: 400, LimitBytes: 768 << 20}},
		{"gale.yaml sets the budget", Config{WorkerHeapMemoryMB: 2048}, nil, WorkerMemory{GCPercent: 400, LimitBytes: 2048 << 20}},
		{"topology turns proportional GC off", nil, Config{TopologyWorkerGOGC: GOGCOff}, WorkerMemory{GCPercent: GOGCOff, LimitBytes: 768 << 20}},
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
