package backoff

import (
	"testing"
	"time"
)

func TestDoubling(t *testing.T) {
	d := Doubling{Min: 100 * time.Millisecond, Max: 2 * time.Second}
	want := []time.Duration{100, 100, 100, 200, 400, 800, 1600, 2000, 2000}
	for i, w := range want {
		n := i - 1 // from -1: below 1 counts as 1
		if got := d.Delay(n); got != w*time.Millisecond {
			t.Errorf("Delay(%d) = %v, want %v", n, got, w*time.Millisecond)
		}
	}
	// A peer down for days: no overflow, the cap holds.
	if got := d.Delay(1 << 30); got != 2*time.Second {
		t.Errorf("Delay(1<<30) = %v, want the cap 2s", got)
	}
	// A cap below the start is no cap below it.
	if got := (Doubling{Min: time.Second, Max: time.Millisecond}).Delay(3); got != time.Second {
		t.Errorf("Max below Min: Delay(3) = %v, want Min 1s", got)
	}
}
