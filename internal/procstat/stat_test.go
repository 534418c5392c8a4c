package procstat

import (
	"errors"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
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

// TestRSSIsStatmResident: RSS counts what /proc/self/statm's resident
// field does, in bytes (not pages).
func TestRSSIsStatmResident(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	got, err := RSS()
	if err != nil {
		t.Fatal(err)
	}
	// The two reads are moments apart: the runtime may touch a few pages
	// in between.
	if want := pages * int64(os.Getpagesize()); (got-want) > 4<<20 || (want-got) > 4<<20 {
		t.Errorf("RSS = %d bytes, /proc/self/statm says %d pages = %d bytes", got, pages, want)
	}
}

// TestCmdline: this process's command line is its arguments; a pid that
// does not exist is an error, and not ErrUnsupported.
func TestCmdline(t *testing.T) {
	if runtime.GOOS != "linux" {
		if _, err := Cmdline(os.Getpid()); !errors.Is(err, ErrUnsupported) {
			t.Errorf("Cmdline without /proc: got %v, want ErrUnsupported", err)
		}
		return
	}
	got, err := Cmdline(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, os.Args) {
		t.Errorf("Cmdline(self) = %q, want os.Args %q", got, os.Args)
	}
	if _, err := Cmdline(1 << 30); err == nil || errors.Is(err, ErrUnsupported) {
		t.Errorf("Cmdline of a pid that does not exist: got %v, want an error other than ErrUnsupported", err)
	}
}
