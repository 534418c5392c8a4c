package failover

import (
	"slices"
	"testing"
	"time"
)

func ids(ms []Msg) []uint64 {
	out := make([]uint64, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func checkCounts(t *testing.T, q *Queue, want Counts) {
	t.Helper()
	if got := q.Counts(); got != want {
		t.Errorf("counts\n got %+v\nwant %+v", got, want)
	}
}

// TestQueueAccounting walks a queue through every way a message ends or
// comes back: acked, nacked by its holder, nacked by a spout that no
// longer holds it, held past its lease, held by a spout whose connection
// closed, acked twice, acked late while it waited to be taken again.
func TestQueueAccounting(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const lease = 30 * time.Second
	q := NewQueue(lease, 100)
	for range 6 {
		if !q.Produce() {
			t.Fatal("Produce refused below MaxUnacked")
		}
	}
	a := q.Take(1, 2, t0)                  // 1, 2
	b := q.Take(2, 3, t0.Add(time.Second)) // 3, 4, 5
	if got := ids(a); !slices.Equal(got, []uint64{1, 2}) {
		t.Fatalf("holder 1 took %v, want [1 2]", got)
	}
	if got := ids(b); !slices.Equal(got, []uint64{3, 4, 5}) {
		t.Fatalf("holder 2 took %v, want [3 4 5]", got)
	}
	if a[0].Text == "" || a[0].Text == a[1].Text {
		t.Errorf("sentences %q and %q: want two different, non-empty", a[0].Text, a[1].Text)
	}
	if q.Held() != 5 || q.Unacked() != 6 {
		t.Errorf("held %d, unacked %d: want 5 and 6", q.Held(), q.Unacked())
	}

	q.Ack(1, 3*time.Millisecond)
	q.Nack(1, 2) // holder 1's tree of 2 failed: back at once
	q.Nack(1, 3) // 3 is holder 2's: counted, not put back
	checkCounts(t, q, Counts{Produced: 6, Emitted: 5, Acked: 1, Failed: 2, Replayed: 1, ReplayedFailed: 1})

	// Replays are taken before new messages.
	if got := ids(q.Take(1, 2, t0.Add(2*time.Second))); !slices.Equal(got, []uint64{2, 6}) {
		t.Fatalf("took %v, want the replay 2, then 6", got)
	}

	// Holder 2's connection closes: 3, 4 and 5 come back.
	q.Leave(2)
	// Holder 1's leases (2 and 6, taken at t0+2s) end at t0+32s; not before.
	q.Expire(t0.Add(31 * time.Second))
	checkCounts(t, q, Counts{Produced: 6, Emitted: 7, Acked: 1, Failed: 2, Replayed: 4, ReplayedFailed: 1, ReplayedLeft: 3})
	q.Expire(t0.Add(32 * time.Second))
	checkCounts(t, q, Counts{Produced: 6, Emitted: 7, Acked: 1, Failed: 2, Replayed: 6, ReplayedFailed: 1, ReplayedLeft: 3, ReplayedLease: 2})
	if q.Held() != 0 || q.Unacked() != 5 {
		t.Errorf("held %d, unacked %d: want 0 and 5", q.Held(), q.Unacked())
	}

	// Holder 2's ack of 4 arrives after 4 was put back: 4 is acked, and
	// not handed out again.
	q.Ack(4, 5*time.Millisecond)
	got := ids(q.Take(3, 10, t0.Add(33*time.Second)))
	if want := []uint64{3, 5, 2, 6}; !slices.Equal(got, want) {
		t.Fatalf("took %v, want %v (in the order they were put back, without the acked 4)", got, want)
	}
	for _, id := range got {
		q.Ack(id, 7*time.Millisecond)
	}
	q.Ack(4, time.Millisecond)  // acked before: a duplicate
	q.Ack(99, time.Millisecond) // never made
	q.Nack(3, 98)
	checkCounts(t, q, Counts{Produced: 6, Emitted: 11, Acked: 6, Duplicates: 1, Failed: 2, Unknown: 2,
		Replayed: 6, ReplayedFailed: 1, ReplayedLeft: 3, ReplayedLease: 2})
	if q.Unacked() != 0 {
		t.Errorf("unacked %d after every message was acked, want 0", q.Unacked())
	}

	h := q.Latencies()
	if h.Count() != 6 {
		t.Errorf("latencies recorded %d, want 6 (one per first ack)", h.Count())
	}
	if p := h.Quantile(1); p < 6900*time.Microsecond || p > 7100*time.Microsecond {
		t.Errorf("max latency %s, want about 7ms", p)
	}
	if q.Latencies().Count() != 0 {
		t.Error("a second Latencies has counts, want a fresh histogram")
	}
}

// TestQueueLost: what is never acked is still unacked after the run: the
// lost messages, held or waiting.
func TestQueueLost(t *testing.T) {
	t0 := time.Unix(1000, 0)
	q := NewQueue(time.Minute, 100)
	for range 4 {
		q.Produce()
	}
	for _, m := range q.Take(1, 3, t0) {
		if m.ID != 2 {
			q.Ack(m.ID, time.Millisecond)
		}
	}
	if q.Unacked() != 2 || q.Held() != 1 {
		t.Errorf("unacked %d, held %d: want 2 lost (2 held, 4 never taken), 1 held", q.Unacked(), q.Held())
	}
}

// TestQueueBounded: production stops at MaxUnacked messages not acked,
// counting what it skipped, and resumes as acks free room; replays do not
// count against the bound twice.
func TestQueueBounded(t *testing.T) {
	t0 := time.Unix(1000, 0)
	q := NewQueue(time.Minute, 3)
	made := 0
	for range 5 {
		if q.Produce() {
			made++
		}
	}
	if made != 3 || q.Counts().Throttled != 2 {
		t.Fatalf("made %d, throttled %d: want 3 and 2", made, q.Counts().Throttled)
	}
	ms := q.Take(1, 3, t0)
	q.Leave(1) // all three back: still 3 unacked
	if q.Produce() {
		t.Error("Produce made a message with 3 unacked (put back), want it refused")
	}
	q.Ack(ms[0].ID, time.Millisecond)
	if !q.Produce() {
		t.Error("Produce refused after an ack freed room")
	}
}

func TestFIFOReusesStorage(t *testing.T) {
	var f fifo
	for i := range uint64(5000) {
		f.push(i)
		if i%2 == 1 {
			f.pop()
		}
	}
	if f.len() != 2500 {
		t.Fatalf("len %d, want 2500", f.len())
	}
	for want := uint64(2500); want < 5000; want++ {
		got, ok := f.pop()
		if !ok || got != want {
			t.Fatalf("pop %d %v, want %d", got, ok, want)
		}
	}
	if len(f.ids) > 4096 {
		t.Errorf("storage %d ids for at most 2500 queued, want it compacted", len(f.ids))
	}
}
