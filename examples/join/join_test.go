package join_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/examples/join"
	"github.com/gale-stream/gale/galetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// people returns n records on each side, the ages in reverse order so
// that each side is first for half of the ids.
func people(n int) ([]join.Gender, []join.Age) {
	var gs []join.Gender
	var as []join.Age
	for i := range n {
		g := "female"
		if i%2 == 1 {
			g = "male"
		}
		gs = append(gs, join.Gender{ID: fmt.Sprintf("p%02d", i), Gender: g})
	}
	for i := n - 1; i >= 0; i-- {
		as = append(as, join.Age{ID: fmt.Sprintf("p%02d", i), Age: 20 + i})
	}
	return gs, as
}

func want(i int) join.Joined {
	g := "female"
	if i%2 == 1 {
		g = "male"
	}
	return join.Joined{ID: fmt.Sprintf("p%02d", i), Gender: g, Age: 20 + i}
}

func run(t *testing.T, gs []join.Gender, as []join.Age, opts join.Options) *galetest.Result {
	t.Helper()
	topo, err := join.Topology(gs, as, opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := galetest.Complete(context.Background(), topo, galetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func sortedIDs(ids []any) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.(string)
	}
	slices.Sort(out)
	return out
}

func ids(n int, except ...string) []string {
	var out []string
	for i := range n {
		id := fmt.Sprintf("p%02d", i)
		if !slices.Contains(except, id) {
			out = append(out, id)
		}
	}
	return out
}

func TestAllJoinedAndAcked(t *testing.T) {
	const n = 40
	gs, as := people(n)
	var got []join.Joined
	res := run(t, gs, as, join.Options{Joiners: 3, Sink: func(j join.Joined) error {
		got = append(got, j)
		return nil
	}})
	slices.SortFunc(got, func(a, b join.Joined) int { return cmp.Compare(a.ID, b.ID) })
	if len(got) != n {
		t.Fatalf("sink got %d joined records, want %d: %v", len(got), n, got)
	}
	for i, j := range got {
		if j != want(i) {
			t.Errorf("joined[%d] = %+v, want %+v", i, j, want(i))
		}
	}
	if e := res.Emitted(join.JoinBolt); len(e) != n {
		t.Errorf("join emitted %d tuples, want %d", len(e), n)
	}
	for _, s := range []string{join.GendersSpout, join.AgesSpout} {
		if a := sortedIDs(res.Acked(s)); !slices.Equal(a, ids(n)) {
			t.Errorf("%s acked %v, want all %d ids", s, a, n)
		}
		if f := res.Failed(s); len(f) != 0 {
			t.Errorf("%s failed %v, want none", s, f)
		}
	}
}

var errRejected = errors.New("sink rejects the record")

// A failed joined tuple fails both trees it belongs to: the gender and the
// age message of that id, and nothing else.
func TestSinkFailureFailsBothSides(t *testing.T) {
	const n = 20
	gs, as := people(n)
	res := run(t, gs, as, join.Options{Joiners: 2, Sink: func(j join.Joined) error {
		if j.ID == "p07" {
			return errRejected
		}
		return nil
	}})
	for _, s := range []string{join.GendersSpout, join.AgesSpout} {
		f := res.Failed(s)
		if len(f) != 1 || f[0].MsgID != "p07" {
			t.Fatalf("%s failed %v, want only p07", s, f)
		}
		var fe *gale.FailedError
		if !errors.As(f[0].Reason, &fe) || fe.Component != join.SinkBolt || !errors.Is(fe, errRejected) {
			t.Errorf("%s: p07 failed with %v, want a FailedError from %q wrapping %v", s, f[0].Reason, join.SinkBolt, errRejected)
		}
		if a := sortedIDs(res.Acked(s)); !slices.Equal(a, ids(n, "p07")) {
			t.Errorf("%s acked %v, want every id but p07", s, a)
		}
	}
}

// With replays, the failed pair is re-emitted by both spouts, meets again
// in the join and is acked the second time.
func TestSinkFailureReplaysBothSides(t *testing.T) {
	const n = 10
	gs, as := people(n)
	seen := 0
	res := run(t, gs, as, join.Options{MaxReplays: 1, Sink: func(j join.Joined) error {
		if j.ID == "p03" {
			seen++
			if seen == 1 {
				return errRejected
			}
		}
		return nil
	}})
	if seen != 2 {
		t.Errorf("sink saw p03 %d times, want 2", seen)
	}
	for _, s := range []string{join.GendersSpout, join.AgesSpout} {
		if f := res.Failed(s); len(f) != 1 || f[0].MsgID != "p03" {
			t.Errorf("%s failed %v, want p03 once", s, f)
		}
		if a := sortedIDs(res.Acked(s)); !slices.Equal(a, ids(n)) {
			t.Errorf("%s acked %v, want all %d ids", s, a, n)
		}
	}
}

// An id with only one half is failed by the join after the expiry, on the
// simulated clock, before the message timeout; it is never acked.
func TestOneSidedExpires(t *testing.T) {
	const n = 6
	const expiry = 4
	gs, as := people(n)
	gs = append(gs, join.Gender{ID: "only-gender", Gender: "female"})
	as = append(as, join.Age{ID: "only-age", Age: 99})
	var got []join.Joined
	res := run(t, gs, as, join.Options{ExpirySecs: expiry, Joiners: 2, Sink: func(j join.Joined) error {
		got = append(got, j)
		return nil
	}})
	if len(got) != n {
		t.Errorf("sink got %d joined records, want %d: %v", len(got), n, got)
	}
	for s, lonely := range map[string]string{join.GendersSpout: "only-gender", join.AgesSpout: "only-age"} {
		f := res.Failed(s)
		if len(f) != 1 || f[0].MsgID != lonely {
			t.Fatalf("%s failed %v, want only %s", s, f, lonely)
		}
		var fe *gale.FailedError
		if !errors.As(f[0].Reason, &fe) || fe.Component != join.JoinBolt || !errors.Is(fe, join.ErrExpired) {
			t.Errorf("%s: %s failed with %v, want a FailedError from %q wrapping ErrExpired", s, lonely, f[0].Reason, join.JoinBolt)
		}
		if errors.Is(f[0].Reason, gale.ErrTimeout) {
			t.Errorf("%s: %s timed out; the join should have expired it first", s, lonely)
		}
		if a := sortedIDs(res.Acked(s)); !slices.Equal(a, ids(n)) {
			t.Errorf("%s acked %v, want the %d joined ids only", s, a, n)
		}
	}
	if res.Elapsed < expiry*time.Second || res.Elapsed >= 30*time.Second {
		t.Errorf("simulated time elapsed %s, want at least the expiry (%ds) and under the message timeout (30s)", res.Elapsed, expiry)
	}
	t.Logf("simulated time elapsed: %s", res.Elapsed)
}

func TestDuplicateIDRejected(t *testing.T) {
	_, err := join.Topology([]join.Gender{{ID: "x"}, {ID: "x"}}, nil, join.Options{})
	if err == nil {
		t.Fatal("Topology accepted a duplicate id")
	}
}
