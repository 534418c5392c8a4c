package nimbus

import (
	"math"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/nimbuspb"
	"github.com/gale-stream/gale/internal/plan"
	"github.com/gale-stream/gale/internal/testutil"
)

func TestLimitsCountAsThePlanWould(t *testing.T) {
	l := limits{tasks: 100, executors: 10}
	comp := func(id string, tasks, par, maxPar int) plan.Component {
		return plan.Component{ID: id, Tasks: tasks, Parallelism: par, MaxTaskParallelism: maxPar}
	}
	tests := []struct {
		name  string
		d     plan.Topology
		wants []string // "" for accepted
	}{
		{"at the bounds", plan.Topology{Components: []plan.Component{comp("a", 96, 6, 0), comp("b", 4, 4, 0)}}, nil},
		{"one task over", plan.Topology{Components: []plan.Component{comp("a", 96, 1, 0), comp("b", 5, 1, 0)}},
			[]string{"101 tasks", "bound of 100 tasks", config.NimbusTasksPerTopology}},
		{"max task parallelism caps the tasks", plan.Topology{Components: []plan.Component{comp("a", 1_000_000, 1, 100)}}, nil},
		{"executors are capped by the tasks", plan.Topology{Components: []plan.Component{comp("a", 5, 1_000_000, 0), comp("b", 5, 1_000_000, 0)}}, nil},
		{"one executor over", plan.Topology{Components: []plan.Component{comp("a", 5, 5, 0), comp("b", 6, 6, 0)}},
			[]string{"11 executors", "bound of 10 executors", config.NimbusExecutorsPerTopology}},
		{"sums of the largest numbers", plan.Topology{Components: []plan.Component{
			comp("a", math.MaxInt32, math.MaxInt32, 0), comp("b", math.MaxInt32, math.MaxInt32, 0), comp("c", math.MaxInt32, math.MaxInt32, 0)}},
			[]string{"6442450941 tasks", config.NimbusTasksPerTopology}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := l.check(tt.d)
			if len(tt.wants) == 0 {
				if err != nil {
					t.Errorf("got %v, want accepted", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want refused saying %q", tt.wants)
			}
			for _, w := range tt.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to say %q", err, w)
				}
			}
		})
	}
}

// TestSubmitOverTheBoundsIsRefusedAtOnce submits topologies of 1,000,000
// and 20,000,000 tasks, too many executors and too large a record, under
// the default bounds: each is refused, before its artifact is uploaded,
// naming the bound and its key, and leaves nothing behind.
func TestSubmitOverTheBoundsIsRefusedAtOnce(t *testing.T) {
	cl := newCluster(t)
	cl.supervisor("s1", 6700, 6701)
	nd := cl.startNimbus("n1", "", nil)
	nd.leads()
	with := func(f func(h *nimbuspb.SubmitHeader)) submission {
		s := newSubmission("big", 2, 1)
		f(s.header)
		return s
	}
	tests := []struct {
		name string
		sub  submission
		says []string
	}{
		{"1,000,000 tasks", with(func(h *nimbuspb.SubmitHeader) {
			h.Definition.Components[1].Tasks, h.Definition.Components[1].Parallelism = 1_000_000, 1_000_000
		}), []string{`"big"`, "1000006 tasks", "100000 tasks per topology", config.NimbusTasksPerTopology}},
		{"20,000,000 tasks", with(func(h *nimbuspb.SubmitHeader) {
			h.Definition.Components[0].Tasks, h.Definition.Components[0].Parallelism = 20_000_000, 20_000_000
		}), []string{"20000008 tasks", config.NimbusTasksPerTopology}},
		{"20,000 executors", with(func(h *nimbuspb.SubmitHeader) {
			h.Definition.Components[1].Tasks, h.Definition.Components[1].Parallelism = 20_000, 20_000
		}), []string{"20004 executors", "10000 executors per topology", config.NimbusExecutorsPerTopology}},
		{"a record of 1 MiB", with(func(h *nimbuspb.SubmitHeader) { h.Definition.Params["blob"] = strings.Repeat("x", 1<<20) }),
			[]string{"bytes as a record", "512 KiB"}},
	}
	rev := cl.etcd.RaftIndex()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := nd.submit(testutil.Context(t), tt.sub)
			wantCode(t, err, codes.InvalidArgument, tt.says...)
		})
	}
	if ts := cl.topologies(); len(ts) != 0 {
		t.Errorf("refused submissions left topologies %+v", ts)
	}
	if files := nd.artifactFiles(); len(files) != 0 {
		t.Errorf("refused submissions left files %v: they were refused after their upload", files)
	}
	if got := cl.etcd.RaftIndex(); got != rev {
		t.Errorf("refused submissions moved etcd's raft index from %d to %d", rev, got)
	}

	// A rebalance is bounded too: count's 20,000 tasks run in 2 executors
	// under the bounds, and -e count=20000 would be 20,006.
	sub := newSubmission("wc", 1, 2)
	sub.header.Definition.Components[2].Tasks = 20_000
	id := nd.mustSubmit(sub).GetId()
	before, _ := cl.store.Topology(testutil.Context(t), id)
	_, err := nd.api.Rebalance(testutil.Context(t), &nimbuspb.RebalanceRequest{Name: "wc", WaitSecs: 0, Executors: map[string]int32{"count": 20_000}})
	wantCode(t, err, codes.InvalidArgument, `"wc"`, "20006 executors", "10000 executors per topology", config.NimbusExecutorsPerTopology)
	if after, _ := cl.store.Topology(testutil.Context(t), id); after.Rev != before.Rev {
		t.Errorf("a refused rebalance rewrote the record: %+v", after)
	}
}

// TestAnAssignmentEtcdRefusesFailsOnlyItsTopology raises the bounds and
// submits a topology of 1,000,000 executors, whose assignment is over
// etcd's request limit, then a small one: the large one is pending with
// the reason, in Submit's answer and in List, and the small one is
// scheduled all the same, as are the changes after it.
func TestAnAssignmentEtcdRefusesFailsOnlyItsTopology(t *testing.T) {
	cl := newCluster(t)
	cl.supervisor("s1", 6700, 6701, 6702)
	nd := cl.startNimbus("n1", "", func(c *Config) {
		c.Cluster = gale.Config{config.NimbusTasksPerTopology: 2_000_000, config.NimbusExecutorsPerTopology: 2_000_000}
	})
	nd.leads()
	huge := newSubmission("huge", 1, 1)
	huge.header.Definition.Components[1].Tasks, huge.header.Definition.Components[1].Parallelism = 1_000_000, 1_000_000
	resp := nd.mustSubmit(huge)
	if resp.GetStatus() != "PENDING" || !strings.Contains(resp.GetPendingReason(), "could not be written") {
		t.Fatalf("Submit of 1,000,000 executors: got %v, want PENDING saying its assignment could not be written", resp)
	}
	if _, ok := cl.assignment(resp.GetId()); ok {
		t.Error("the huge topology has an assignment")
	}
	small := nd.mustSubmit(newSubmission("small", 1, 2))
	if small.GetStatus() != "ACTIVE" {
		t.Fatalf("Submit after the huge one: got %v, want ACTIVE", small)
	}
	a, ok := cl.assignment(small.GetId())
	if !ok || !a.Active || len(a.Workers) != 1 {
		t.Fatalf("the small topology's assignment: %s, %v; want 1 active worker", describe(a), ok)
	}
	list, err := nd.api.List(testutil.Context(t), &nimbuspb.ListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.GetTopologies() {
		switch s.GetName() {
		case "huge":
			if !strings.Contains(s.GetPendingReason(), "could not be written") || !strings.Contains(s.GetPendingReason(), "kill it") {
				t.Errorf("List: huge's pending reason %q, want why and what to do", s.GetPendingReason())
			}
		case "small":
			if s.GetPendingReason() != "" {
				t.Errorf("List: small's pending reason %q, want none", s.GetPendingReason())
			}
		}
	}
	// The calls that reconcile go on working.
	if _, err := nd.api.Deactivate(testutil.Context(t), &nimbuspb.DeactivateRequest{Name: "small"}); err != nil {
		t.Fatalf("Deactivate small: %v", err)
	}
	if a, _ := cl.assignment(small.GetId()); a.Active {
		t.Errorf("after Deactivate: %s, want inactive", describe(a))
	}
	if _, err := nd.api.Kill(testutil.Context(t), &nimbuspb.KillRequest{Name: "huge", WaitSecs: 0}); err != nil {
		t.Fatalf("Kill huge: %v", err)
	}
	if _, err := cl.store.Topology(testutil.Context(t), resp.GetId()); err == nil {
		t.Error("the huge topology is still recorded after its kill")
	}
}
