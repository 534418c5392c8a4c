package kafka_test

import (
	"testing"
	"time"
)

// TestAtLeastOnceEndToEnd: every produced record reaches the bolt, and
// once all are acked the group's committed offsets are the ends of the
// partitions, and Progress counts them.
func TestAtLeastOnceEndToEnd(t *testing.T) {
	const topic, parts, n = "orders", 3, 300
	c := newCluster(t, parts, topic)
	produce(t, c, topic, parts, 0, n)
	sp := mustSpouts(t, spoutConfig(c, topic, "g1"))
	s := newSeen()
	lt := startTopology(t, "alo", sp, 2, s, nil)
	defer lt.Stop()
	waitFor(t, 20*time.Second, "every record processed", func() bool { return s.distinct() == n })
	waitFor(t, 20*time.Second, "every offset committed", func() bool { return sp.Progress() == n })
	lt.Stop()
	got := committed(t, c, "g1", topic)
	for p := int32(0); p < parts; p++ {
		if got[p] != n/parts {
			t.Errorf("partition %d: committed %d, want %d (all: %v)", p, got[p], n/parts, got)
		}
	}
	st := sp.Stats()
	if st.Acked < n || st.Emitted < n || st.Lag != 0 {
		t.Errorf("stats %+v: want acked and emitted ≥ %d, lag 0", st, n)
	}
	if missing, _ := s.missing(n); len(missing) > 0 {
		t.Errorf("missing %v", missing)
	}
}
