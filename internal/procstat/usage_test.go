package procstat

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

// TestSelfUsage: this process's CPU grows while it spins, and its peak
// RSS, in bytes, is at least its RSS now.
func TestSelfUsage(t *testing.T) {
	before, err := SelfUsage()
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		if !errors.Is(err, ErrUnsupported) {
			t.Fatalf("SelfUsage outside unix: got %v, want ErrUnsupported", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	x := 0
	for {
		for i := range 1 << 20 {
			x += i
		}
		now, err := SelfUsage()
		if err != nil {
			t.Fatal(err)
		}
		if now.CPU-before.CPU >= 50*time.Millisecond {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("CPU went from %v to %v after 30 s of spinning", before.CPU, now.CPU)
		}
	}
	runtime.KeepAlive(x)
	if runtime.GOOS == "linux" {
		rss, err := RSS()
		if err != nil {
			t.Fatal(err)
		}
		u, err := SelfUsage()
		if err != nil {
			t.Fatal(err)
		}
		if u.MaxRSS < rss {
			t.Errorf("peak RSS %d bytes < RSS now %d bytes: MaxRSS not in bytes?", u.MaxRSS, rss)
		}
	}
}

// TestChildrenUsage: a child process waited for counts among the
// children, with a peak RSS.
func TestChildrenUsage(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("getrusage is unix's")
	}
	before, err := ChildrenUsage()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1") // stdin is /dev/null: it exits at once
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	after, err := ChildrenUsage()
	if err != nil {
		t.Fatal(err)
	}
	if after.CPU < before.CPU || after.MaxRSS < 1<<20 {
		t.Errorf("after a child ended: children's CPU %v (was %v), peak RSS %d bytes, want no less CPU and ≥ 1 MiB", after.CPU, before.CPU, after.MaxRSS)
	}
}
