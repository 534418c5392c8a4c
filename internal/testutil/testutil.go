// Package testutil holds helpers for this module's tests; it is not for
// topology authors (they have galetest). Import it only from tests and
// test-support packages (clustertest, clitest): a test's context and the
// poll for a condition, seeds for randomized tests that print and replay
// (Seed, -seed N), a program run in a process of its own (StartProc), and
// TLS certificates (NewCert, NewCA), once for every package instead of a
// copy in each.
package testutil

import (
	"context"
	"testing"
	"time"

	"github.com/gale-stream/gale/internal/backoff"
)

// ContextTimeout bounds the context Context returns: generous, so that a
// busy machine does not time a call out, but short of go test's own
// timeout, so that a call that hangs fails its test.
const ContextTimeout = 60 * time.Second

// Context returns a context for the calls of a test: done when the test
// ends (t.Context, cancelled just before its Cleanup functions run) or
// after ContextTimeout.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), ContextTimeout)
	t.Cleanup(cancel)
	return ctx
}

// poll is Eventually's wait between two looks at the condition: short at
// first, for a condition that holds soon, doubled up to a cap, so that a
// slow one is not polled in a tight loop.
var poll = backoff.Doubling{Min: 100 * time.Microsecond, Max: 10 * time.Millisecond}

// slow is how long a wait that succeeded may take before Eventually logs
// it: a hint that a timeout is nearer than it looks on a busy machine.
const slow = 5 * time.Second

// Eventually polls cond until it holds, and fails the test (t.Fatalf)
// naming what it waited for if cond has not held after timeout. cond is
// called first at once, then after waits growing from 100 µs to 10 ms;
// it runs on the caller's goroutine and may call t's methods. A timeout
// is a deadline for a busy machine, not an expectation: pick one far
// above the time the condition takes.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	wait(t, timeout, what, cond, poll.Delay)
}

// EventuallyEvery is Eventually with a fixed wait of every between two
// looks at cond, for a cond that tells something from its successive
// calls (say, a count that stopped moving for every) or that acts each
// time (say, advancing a clock by one tick).
func EventuallyEvery(t testing.TB, timeout, every time.Duration, what string, cond func() bool) {
	t.Helper()
	wait(t, timeout, what, cond, func(int) time.Duration { return every })
}

func wait(t testing.TB, timeout time.Duration, what string, cond func() bool, delay func(n int) time.Duration) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	var timer *time.Timer
	for n := 1; !cond(); n++ {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
			return // for a testing.TB whose Fatalf returns
		}
		d := delay(n)
		if timer == nil {
			timer = time.NewTimer(d)
			defer timer.Stop()
		} else {
			timer.Reset(d)
		}
		<-timer.C
	}
	if d := time.Since(start); d > slow {
		t.Logf("waited %v for %s", d.Round(time.Millisecond), what)
	}
}
