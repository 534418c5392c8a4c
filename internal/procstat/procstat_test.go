package procstat

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// TestRSSGrowsWithTouchedMemory: RSS reflects memory the process touches.
func TestRSSGrowsWithTouchedMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	before, err := RSS()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<20)
	for i := range buf {
		if i%4096 == 0 {
			buf[i] = 1
		}
	}
	after, err := RSS()
	if err != nil {
		t.Fatal(err)
	}
	if after-before < 32<<20 {
		t.Errorf("RSS grew by %d bytes after touching 64 MiB", after-before)
	}
	runtime.KeepAlive(buf)
}

// TestCPUCountsBusyWork: CPU of this process grows while it spins; a pid
// that does not exist is an error.
func TestCPUCountsBusyWork(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	pid := os.Getpid()
	before, err := CPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	x := 0
	for {
		for i := range 1 << 20 {
			x += i
		}
		now, err := CPU(pid)
		if err != nil {
			t.Fatal(err)
		}
		if now-before >= 100*time.Millisecond {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("CPU went from %v to %v after 30 s of spinning", before, now)
		}
	}
	runtime.KeepAlive(x)
	if _, err := CPU(1 << 30); err == nil {
		t.Error("CPU of a pid that does not exist: got no error")
	}
}
