package testutil

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fakeTB is a testing.TB whose Fatalf records the failure and, as the
// real one does, ends the goroutine that called it (runtime.Goexit), so a
// test can see Eventually fail without failing itself. Run the helper
// under test with run.
type fakeTB struct {
	testing.TB // the real test, for what fakeTB does not override
	fatal      []string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatal = append(f.fatal, fmt.Sprintf(format, args...))
	runtime.Goexit()
}

// run calls fn on a goroutine of its own, as go test runs a test, and
// says whether fn returned (rather than being ended by Fatalf).
func (f *fakeTB) run(fn func()) (returned bool) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
		returned = true
	}()
	<-done
	return returned
}

func (f *fakeTB) Logf(format string, args ...any) { f.TB.Logf(format, args...) }

// holdsOnCall returns a cond that holds from its nth call on, and its
// count of calls.
func holdsOnCall(n int) (func() bool, *int) {
	calls := 0
	return func() bool { calls++; return calls >= n }, &calls
}

func TestEventuallyWaitsForCond(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(tb testing.TB, cond func() bool)
	}{
		{"Eventually", func(tb testing.TB, cond func() bool) {
			Eventually(tb, time.Minute, "the fifth call", cond)
		}},
		{"EventuallyEvery", func(tb testing.TB, cond func() bool) {
			EventuallyEvery(tb, time.Minute, time.Millisecond, "the fifth call", cond)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, n := range []int{1, 5, 20} {
				f := &fakeTB{TB: t}
				cond, calls := holdsOnCall(n)
				if !f.run(func() { tc.run(f, cond) }) {
					t.Errorf("cond holding from call %d: did not return", n)
				}
				// Returned neither before cond held nor looking again after.
				if *calls != n {
					t.Errorf("cond holding from call %d: returned after %d calls", n, *calls)
				}
				if len(f.fatal) > 0 {
					t.Errorf("cond holding from call %d: failed the test: %q", n, f.fatal)
				}
			}
		})
	}
}

func TestEventuallyFailsWhenCondNeverHolds(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(tb testing.TB, cond func() bool)
	}{
		{"Eventually", func(tb testing.TB, cond func() bool) {
			Eventually(tb, 20*time.Millisecond, "the impossible", cond)
		}},
		{"EventuallyEvery", func(tb testing.TB, cond func() bool) {
			EventuallyEvery(tb, 20*time.Millisecond, time.Millisecond, "the impossible", cond)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeTB{TB: t}
			calls := 0
			if f.run(func() { tc.run(f, func() bool { calls++; return false }) }) {
				t.Error("returned after failing the test: the test would go on")
			}
			if len(f.fatal) != 1 {
				t.Fatalf("Fatalf called %d times, want once: %q", len(f.fatal), f.fatal)
			}
			if msg := f.fatal[0]; !strings.Contains(msg, "the impossible") || !strings.Contains(msg, "20ms") {
				t.Errorf("failure %q names neither what it waited for nor the timeout", msg)
			}
			if calls < 1 {
				t.Errorf("cond called %d times before the failure", calls)
			}
		})
	}
}

func TestContext(t *testing.T) {
	var ctx context.Context
	t.Run("sub", func(t *testing.T) {
		ctx = Context(t)
		if err := ctx.Err(); err != nil {
			t.Fatalf("Context is done during its test: %v", err)
		}
		if _, ok := ctx.Deadline(); !ok {
			t.Error("Context has no deadline")
		}
	})
	if ctx.Err() == nil {
		t.Error("Context is not done after its test ended")
	}
}
