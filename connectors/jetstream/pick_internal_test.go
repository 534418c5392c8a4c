package jetstream

import (
	"testing"

	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/gale-stream/gale/retry"
)

// TestPickFairShare drives pick emit by emit: while new messages wait, at
// most RetriesPerNew redeliveries go in a row; with none waiting,
// redeliveries go one after the other, and the other way round.
func TestPickFairShare(t *testing.T) {
	for _, perNew := range []int{1, 3, 5} {
		p := retry.DefaultPolicy()
		p.RetriesPerNew = perNew
		s := &Spout{cfg: Config{Retry: p}}
		mk := func(delivered uint64) *held { return &held{meta: &njs.MsgMetadata{NumDelivered: delivered}} }
		for range 20 {
			s.redelivered.push(mk(2))
		}
		for range 4 {
			s.fresh.push(mk(1))
		}
		var got []byte
		for {
			h, ok := s.pick()
			if !ok {
				break
			}
			if h.meta.NumDelivered > 1 {
				got = append(got, 'R')
			} else {
				got = append(got, 'N')
			}
		}
		var want []byte
		var wantR, wantN int64 // emitted while the other kind waited
		r, n := 20, 4
		for r > 0 || n > 0 {
			for i := 0; i < perNew && r > 0; i++ {
				if n > 0 {
					wantR++
				}
				want = append(want, 'R')
				r--
			}
			if n > 0 {
				if r > 0 {
					wantN++
				}
				want = append(want, 'N')
				n--
			}
		}
		if string(got) != string(want) {
			t.Errorf("retries.per.new %d: emitted %s, want %s", perNew, got, want)
		}
		st := s.c.snapshot()
		if st.ContendedNew != wantN || st.ContendedRetries != wantR {
			t.Errorf("retries.per.new %d: contended %d redeliveries and %d new, want %d and %d", perNew, st.ContendedRetries, st.ContendedNew, wantR, wantN)
		}
	}
}
