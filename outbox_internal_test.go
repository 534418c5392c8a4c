package gale

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestBackpressureTimed: a send that waits for room on a full queue adds
// the time it waited to the outbox's backpressure, and a send that finds
// room adds nothing; with the metrics off, waits are not timed.
func TestBackpressureTimed(t *testing.T) {
	for _, timed := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			rt := &runtime{clock: systemClock{}, quit: make(chan struct{})}
			o := &outbox{rt: rt, quit: rt.quit, timeWaits: timed}
			ch := make(chan *batch, 1)
			if !send(o, ch, &batch{}, 1) { // room: no wait
				t.Fatal("send to an empty queue failed")
			}
			if o.waitNanos != 0 {
				t.Fatalf("a send that found room counted %v", time.Duration(o.waitNanos))
			}
			done := make(chan bool)
			go func() { done <- send(o, ch, &batch{}, 1) }()
			synctest.Wait() // the sender is blocked on the full queue
			time.Sleep(3 * time.Second)
			<-ch
			if !<-done {
				t.Fatal("the waiting send failed")
			}
			want := int64(3 * time.Second)
			if !timed {
				want = 0
			}
			if o.waitNanos != want {
				t.Errorf("timed %v: backpressure %v, want %v", timed, time.Duration(o.waitNanos), time.Duration(want))
			}
		})
	}
}
