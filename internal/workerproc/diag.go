package workerproc

import (
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
)

// Diagnostics for experiments, not for production: a worker started with
// one of these variables in its environment profiles or traces its whole
// run to the file named, with ".worker-N" added for worker N, as `gale
// bench --workers N --cpuprofile/--trace` has its workers do
// (LaunchConfig.Env). Nothing else in a worker reads them.
const (
	// CPUProfileEnv names the file for a pprof CPU profile.
	CPUProfileEnv = "GALE_WORKER_CPUPROFILE"
	// TraceEnv names the file for a runtime execution trace (go tool
	// trace).
	TraceEnv = "GALE_WORKER_TRACE"
)

// startDiagnostics starts what CPUProfileEnv and TraceEnv ask for, and
// returns a function that stops it and closes the files.
func startDiagnostics(worker int) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	suffix := ".worker-" + strconv.Itoa(worker)
	if path := os.Getenv(CPUProfileEnv); path != "" {
		f, err := os.Create(path + suffix)
		if err != nil {
			return func() {}, fmt.Errorf("%s: %w", CPUProfileEnv, err)
		}
		stops = append(stops, func() { f.Close() })
		if err := pprof.StartCPUProfile(f); err != nil {
			stop()
			return func() {}, fmt.Errorf("%s: %w", CPUProfileEnv, err)
		}
		stops = append(stops, pprof.StopCPUProfile)
	}
	if path := os.Getenv(TraceEnv); path != "" {
		f, err := os.Create(path + suffix)
		if err != nil {
			stop()
			return func() {}, fmt.Errorf("%s: %w", TraceEnv, err)
		}
		stops = append(stops, func() { f.Close() })
		if err := trace.Start(f); err != nil {
			stop()
			return func() {}, fmt.Errorf("%s: %w", TraceEnv, err)
		}
		stops = append(stops, trace.Stop)
	}
	return stop, nil
}
