package procstat

import (
	"runtime"
	"testing"
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
