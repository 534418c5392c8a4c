//go:build linux

package workermem

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pretouchChildEnv makes the test binary run pretouchChild instead of the
// tests: the page faults of a heap's growth are only countable in a fresh
// process.
const pretouchChildEnv = "GALE_TEST_PRETOUCH_CHILD"

func init() {
	switch mode := os.Getenv(pretouchChildEnv); mode {
	case "":
	case "apply-on", "apply-off":
		os.Exit(applyChild(mode == "apply-on"))
	default:
		os.Exit(pretouchChild(mode))
	}
}

// applyChild applies a worker's default memory settings, pretouched or
// not, and prints the CPU time (user + system) and wall time Apply took,
// in nanoseconds.
func applyChild(pretouch bool) int {
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	start := time.Now()
	restore := Settings{GCPercent: 400, LimitBytes: 768 << 20, FloorBytes: 64 << 20, Pretouch: pretouch}.Apply()
	wall := time.Since(start)
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	restore()
	cpu := after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano()
	fmt.Println(cpu, wall.Nanoseconds())
	return 0
}

// BenchmarkApply measures what Apply costs a fresh worker process with
// the default settings (a 64 MiB floor), pretouched and not: the CPU and
// wall time of Apply itself, and the CPU of the whole child process.
//
//	go test -run '^$' -bench Apply -benchtime 10x ./internal/workermem/
func BenchmarkApply(b *testing.B) {
	for _, mode := range []string{"apply-off", "apply-on"} {
		b.Run(mode, func(b *testing.B) {
			var cpu, wall, child time.Duration
			for b.Loop() {
				cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
				cmd.Env = append(os.Environ(), pretouchChildEnv+"="+mode)
				out, err := cmd.Output()
				if err != nil {
					b.Fatalf("child: %v", err)
				}
				var c, w int64
				if _, err := fmt.Sscan(string(out), &c, &w); err != nil {
					b.Fatalf("child printed %q", out)
				}
				cpu += time.Duration(c)
				wall += time.Duration(w)
				child += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			}
			n := float64(b.N) * float64(time.Millisecond)
			b.ReportMetric(float64(cpu)/n, "apply-cpu-ms/op")
			b.ReportMetric(float64(wall)/n, "apply-wall-ms/op")
			b.ReportMetric(float64(child)/n, "process-cpu-ms/op")
		})
	}
}

// pretouchChild applies a worker's memory settings with a 32 MiB floor,
// pretouched or not (mode "on" or "off"), then grows the heap by 24 MiB of
// small objects, as a worker's first second does, and prints the minor
// page faults that growth took.
func pretouchChild(mode string) int {
	restore := Settings{GCPercent: 400, LimitBytes: 512 << 20, FloorBytes: 32 << 20, Pretouch: mode == "on"}.Apply()
	defer restore()
	const n = 24 << 20 / 256
	keep := make([][]byte, 0, n)
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	for range n {
		b := make([]byte, 256)
		b[0] = 1
		keep = append(keep, b)
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	runtime.KeepAlive(keep)
	fmt.Println(after.Minflt - before.Minflt)
	return 0
}

// TestPretouch checks what worker.heap.pretouch is
// for: a worker whose heap was pretouched grows it up to the GC floor
// without faulting its pages in, where one that was not takes a fault per
// page.
func TestPretouch(t *testing.T) {
	faults := func(mode string) int64 {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), pretouchChildEnv+"="+mode)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("child (%s): %v", mode, err)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
		if err != nil {
			t.Fatalf("child (%s) printed %q", mode, out)
		}
		return n
	}
	off, on := faults("off"), faults("on")
	pages := int64(24<<20) / int64(os.Getpagesize())
	t.Logf("growing the heap by 24 MiB: %d minor faults without pretouch, %d with (%d pages)", off, on, pages)
	if off < pages/2 {
		t.Fatalf("without pretouch the growth took %d faults, fewer than half its %d pages: the test measures nothing", off, pages)
	}
	// The race detector's shadow of the heap is not pretouched, and
	// faults in as the objects are written: there, the heap's own faults
	// are what pretouching saves, at least half its pages'.
	most := off / 8
	if raceEnabled {
		most = off - pages/2
	}
	if on > most {
		t.Errorf("pretouched, the growth took %d faults, more than %d (of the %d it took without)", on, most, off)
	}
}
