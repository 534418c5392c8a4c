package gale

import "testing"

// TestPendingSlots checks the spout's table of trees in flight: an entry is
// found by its slot and root only, a slot is reused once freed, and a stale
// message for a reused slot finds nothing.
func TestPendingSlots(t *testing.T) {
	p := newPendingMap()
	a := p.put(0xA, pendingEntry{msgID: "a"})
	b := p.put(0xB, pendingEntry{msgID: "b"})
	if a == b || p.len() != 2 {
		t.Fatalf("slots %d and %d, len %d: want two slots and len 2", a, b, p.len())
	}
	if _, ok := p.remove(b, 0xA); ok {
		t.Fatal("removed root 0xA by slot of 0xB")
	}
	if _, ok := p.remove(1<<31, 0xA); ok {
		t.Fatal("removed from a slot past the table")
	}
	if e, ok := p.remove(a, 0xA); !ok || e.msgID != "a" {
		t.Fatalf("remove(a) = %v, %t; want message id a", e.msgID, ok)
	}
	c := p.put(0xC, pendingEntry{msgID: "c"})
	if c != a {
		t.Fatalf("new tree in slot %d; want the freed slot %d reused", c, a)
	}
	if _, ok := p.remove(a, 0xA); ok {
		t.Fatal("a stale completion for 0xA removed 0xC, which reused its slot")
	}
	if p.len() != 2 {
		t.Fatalf("len %d, want 2", p.len())
	}
}

// TestPendingTimesOutAfterItsGenerations checks that an entry expires at
// the pendingBuckets-th rotation after it was put or last touched, and not
// before, and that an emptied table gives its memory back.
func TestPendingTimesOutAfterItsGenerations(t *testing.T) {
	p := newPendingMap()
	a := p.put(0xA, pendingEntry{msgID: "a"})
	p.put(0xB, pendingEntry{msgID: "b"})
	for r := 1; r < pendingBuckets; r++ {
		if got := p.rotate(); len(got) != 0 {
			t.Fatalf("rotation %d expired %d entries, want none before %d", r, len(got), pendingBuckets)
		}
		if r == 5 {
			p.touch(a, 0xA) // a now expires 5 rotations after b
		}
	}
	got := p.rotate()
	if len(got) != 1 || got[0].msgID != "b" || p.len() != 1 {
		t.Fatalf("rotation %d expired %v (len now %d); want b only", pendingBuckets, got, p.len())
	}
	for r := 0; r < 4; r++ {
		if got := p.rotate(); len(got) != 0 {
			t.Fatalf("expired %v before its time", got)
		}
	}
	if got := p.rotate(); len(got) != 1 || got[0].msgID != "a" || p.len() != 0 {
		t.Fatalf("expired %v (len %d); want a, the touched one", got, p.len())
	}
	if p.slots != nil || p.free != nil {
		t.Fatalf("an empty table kept %d slots", len(p.slots))
	}
	if _, ok := p.remove(a, 0xA); ok {
		t.Fatal("removed an expired entry")
	}
}
