package nimbus

import (
	"cmp"
	"context"
	"errors"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gale-stream/gale/internal/blobstore"
	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/metrics"
	"github.com/gale-stream/gale/internal/metrics/components"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// chunkSize is the size of a Download's chunks.
const chunkSize = 256 << 10

// api implements nimbuspb.NimbusServer. ctx is the nimbus's run: a call
// in progress returns when it ends.
type api struct {
	nimbuspb.UnimplementedNimbusServer
	n   *Nimbus
	ctx context.Context
}

// callCtx is a call's context that also ends when the nimbus stops.
func (a *api) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(a.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// storeError maps an error from etcd to the call's status.
func storeError(err error) error {
	switch {
	case errors.Is(err, coord.ErrNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, coord.ErrExists):
		return status.Error(codes.AlreadyExists, err.Error())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.Unavailable, "nimbus: stopping or the call's deadline passed: "+err.Error())
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Error(codes.Unavailable, "nimbus: etcd: "+err.Error())
}

// etcdReadTimeout bounds the etcd reads of the calls that only read
// (ClusterInfo, List, Get): with etcd unreachable the caller hears so,
// within its own deadline (the CLI gives each nimbus 5 s), instead of a
// silence that looks like no nimbus at all.
const etcdReadTimeout = 3 * time.Second

// errEtcdSilent is the cause of a read call's context that ran out of
// etcdReadTimeout.
var errEtcdSilent = errors.New("nimbus: etcd did not answer")

// readCtx is a read call's context, bounded by etcdReadTimeout.
func (a *api) readCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, etcdReadTimeout, errEtcdSilent)
}

// readError is the status of a read call's failure: Unavailable naming
// etcd if etcd did not answer in time, else as storeError says.
func (a *api) readError(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), errEtcdSilent) {
		return status.Errorf(codes.Unavailable, "nimbus %s cannot reach etcd at %s: no answer within %s (is etcd running, and reachable from this nimbus?)",
			a.n.id, strings.Join(a.n.cfg.Endpoints, ","), etcdReadTimeout)
	}
	return storeError(err)
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// byName finds a topology by its name or its id.
func (n *Nimbus) byName(ctx context.Context, name string) (coord.Topology, error) {
	if name == "" {
		return coord.Topology{}, status.Error(codes.InvalidArgument, "nimbus: no topology named: give its name or id")
	}
	t, err := n.store.TopologyByName(ctx, name)
	if errors.Is(err, coord.ErrNotFound) {
		t, err = n.store.Topology(ctx, name)
	}
	if errors.Is(err, coord.ErrNotFound) {
		return coord.Topology{}, status.Errorf(codes.NotFound, "nimbus: no topology %q is running (gale list shows those that are)", name)
	}
	if err != nil {
		return coord.Topology{}, storeError(err)
	}
	return t, nil
}

// bySubmission sorts topologies in submission order.
func bySubmission(ts []coord.Topology) {
	slices.SortStableFunc(ts, func(a, b coord.Topology) int {
		return cmp.Or(a.SubmittedAt.Compare(b.SubmittedAt), cmp.Compare(a.ID, b.ID))
	})
}

// counters are a topology's numbers in its summary: its trees over all
// time (its spouts' in the total, windows.go), their complete
// latencies, and how many of its workers are valid now.
type counters struct {
	emitted, acked, failed int64
	latency                metrics.Latency
	running                int
}

// workerReports returns the latest reports of topology t's workers
// (matched by id or name), from supervisors that reported within the
// supervisor timeout.
func (n *Nimbus) workerReports(t coord.Topology, now time.Time) []*nimbuspb.WorkerReport {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []*nimbuspb.WorkerReport
	for _, sup := range sortedKeys(n.mu.reports) {
		r := n.mu.reports[sup]
		if now.Sub(r.at) > n.ttl {
			delete(n.mu.reports, sup)
			continue
		}
		for _, w := range r.workers {
			if w.GetTopology() == t.ID || w.GetTopology() == t.Name {
				out = append(out, w)
			}
		}
	}
	return out
}

// counters are topology t's summary numbers: the workers running from
// their reports ws, the trees from the topology's total, or from ws for
// a topology no report has given component counters of.
func (n *Nimbus) counters(t coord.Topology, ws []*nimbuspb.WorkerReport) counters {
	c := sum(ws)
	total := n.windows.allTime(t.ID, t.Name)
	if total == nil {
		return c
	}
	st := components.SpoutTotals(0, total)
	c.emitted, c.acked, c.failed = st.GetEmitted(), st.GetAcked(), st.GetFailed()
	c.latency, _ = components.LatencyOf(st.GetCompleteLatency()) // checked when reported
	return c
}

func sum(ws []*nimbuspb.WorkerReport) counters {
	var c counters
	for _, w := range ws {
		c.emitted += w.GetEmitted()
		c.acked += w.GetAcked()
		c.failed += w.GetFailed()
		l, _ := components.LatencyOf(w.GetCompleteLatency()) // checked when the report came (Report)
		c.latency.Add(&l)
		if w.GetState() == "valid" {
			c.running++
		}
	}
	return c
}

func (n *Nimbus) pendingReason(id string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mu.pending[id]
}

// List returns every topology in submission order. Any nimbus answers
// it, the standbys too: every supervisor reports to each (but a standby
// that has not heard from every supervisor since it started refuses, so
// that the caller asks another). The pending reasons are the leader's: a
// standby has none.
func (a *api) List(ctx context.Context, _ *nimbuspb.ListRequest) (*nimbuspb.ListResponse, error) {
	ctx, cancel := a.readCtx(ctx)
	defer cancel()
	if err := a.heardAll(ctx); err != nil {
		return nil, err
	}
	filed := a.n.cfg.Now()
	ts, err := a.n.store.Topologies(ctx)
	if err != nil {
		return nil, a.readError(ctx, err)
	}
	live := make(map[string]bool, len(ts))
	for _, t := range ts {
		live[t.ID] = true
	}
	a.n.windows.prune(live, filed)
	bySubmission(ts)
	now := a.n.cfg.Now()
	resp := &nimbuspb.ListResponse{}
	for _, t := range ts {
		ws := a.n.workerReports(t, filed)
		resp.Topologies = append(resp.Topologies, summary(t, a.n.pendingReason(t.ID), now, a.n.counters(t, ws)))
	}
	return resp, nil
}

// heardAll refuses a read on a standby that started less than the
// supervisor timeout ago and has not yet taken the other nimbuses'
// totals (totals.go) or heard from every live supervisor: its counters
// and worker states could be short of what the leader shows. The caller asks another nimbus. The leader always
// answers (supervisors report to a new leader at once).
func (a *api) heardAll(ctx context.Context) error {
	n := a.n
	if n.IsLeader() {
		return nil
	}
	up := n.cfg.Now().Sub(n.windows.born)
	if up >= n.ttl {
		return nil
	}
	if !n.windows.isSynced() {
		return status.Errorf(codes.Unavailable, "nimbus %s is a standby that started %s ago and is still taking the other nimbuses' totals: ask the leader, or this nimbus again in a moment",
			n.id, up.Round(time.Millisecond))
	}
	sups, err := n.store.Supervisors(ctx)
	if err != nil {
		return a.readError(ctx, err)
	}
	var missing []string
	n.mu.Lock()
	for _, s := range sups {
		if _, ok := n.mu.reports[s.ID]; !ok {
			missing = append(missing, s.ID)
		}
	}
	n.mu.Unlock()
	if len(missing) == 0 {
		return nil
	}
	return status.Errorf(codes.Unavailable, "nimbus %s is a standby that started %s ago and has not heard from supervisor(s) %s yet: ask the leader, or this nimbus again in a moment",
		n.id, up.Round(time.Millisecond), strings.Join(missing, ", "))
}

// Get returns one topology, by name or id, with its assignment, its
// workers' latest reports, their per-component counters summed over the
// window asked for (windows.go), and the topology's totals over every
// window.
func (a *api) Get(ctx context.Context, req *nimbuspb.GetRequest) (*nimbuspb.TopologyInfo, error) {
	if metrics.WindowIndex(req.GetWindowSecs()) < 0 {
		return nil, errWindow(req.GetWindowSecs())
	}
	ctx, cancel := a.readCtx(ctx)
	defer cancel()
	if err := a.heardAll(ctx); err != nil {
		return nil, err
	}
	t, err := a.n.byName(ctx, req.GetName())
	if err != nil {
		if ctx.Err() != nil {
			return nil, a.readError(ctx, err)
		}
		return nil, err
	}
	asgs, err := a.n.store.Assignments(ctx)
	if err != nil {
		return nil, a.readError(ctx, err)
	}
	var asg *coord.Assignment
	for i := range asgs {
		if asgs[i].Topology == t.ID {
			asg = &asgs[i]
		}
	}
	filed := a.n.cfg.Now()
	ws := a.n.workerReports(t, filed)
	info := topologyInfo(t, asg, summary(t, a.n.pendingReason(t.ID), a.n.cfg.Now(), a.n.counters(t, ws)), ws)
	info.Components, info.Windows, err = a.n.windows.view(filed, t.ID, t.Name, req.GetWindowSecs(), sumComponents(ws))
	if err != nil {
		return nil, err
	}
	info.WindowSecs = req.GetWindowSecs()
	if d, err := a.n.waitSecs(t, -1); err == nil { // the effective topology.message.timeout.secs
		info.MessageTimeoutSecs = int32(d / time.Second)
	}
	return info, nil
}

// ClusterInfo returns the leader, the nimbuses, the live supervisors and
// how many topologies there are.
func (a *api) ClusterInfo(ctx context.Context, _ *nimbuspb.ClusterInfoRequest) (*nimbuspb.ClusterInfoResponse, error) {
	ctx, cancel := a.readCtx(ctx)
	defer cancel()
	s := a.n.store
	resp := &nimbuspb.ClusterInfoResponse{GaleVersion: a.n.cfg.GaleVersion}
	leader, err := s.Leader(ctx)
	switch {
	case err == nil:
		resp.LeaderId, resp.LeaderAddr = leader.ID, leader.Addr
	case !errors.Is(err, coord.ErrNotFound):
		return nil, a.readError(ctx, err)
	}
	nims, err := s.Nimbuses(ctx)
	if err != nil {
		return nil, a.readError(ctx, err)
	}
	now := a.n.cfg.Now()
	for _, m := range nims {
		resp.Nimbuses = append(resp.Nimbuses, &nimbuspb.NimbusSummary{
			Id: m.ID, Addr: m.Addr, Leader: m.ID == resp.LeaderId, UptimeSecs: int64(now.Sub(m.Started).Seconds()),
		})
	}
	sups, err := s.Supervisors(ctx)
	if err != nil {
		return nil, a.readError(ctx, err)
	}
	asgs, err := s.Assignments(ctx)
	if err != nil {
		return nil, a.readError(ctx, err)
	}
	used := make(map[string]int)
	for _, as := range asgs {
		for _, w := range as.Workers {
			used[w.Supervisor]++
		}
	}
	for _, sup := range sups {
		ss := &nimbuspb.SupervisorSummary{
			Id: sup.ID, Host: sup.Host, SlotsUsed: int32(used[sup.ID]),
			UptimeSecs: int64(now.Sub(sup.Started).Seconds()), Goos: sup.GOOS, Goarch: sup.GOARCH,
		}
		for _, p := range sup.Ports {
			ss.Ports = append(ss.Ports, int32(p))
		}
		resp.Supervisors = append(resp.Supervisors, ss)
	}
	ts, err := s.Topologies(ctx)
	if err != nil {
		return nil, a.readError(ctx, err)
	}
	resp.Topologies = int32(len(ts))
	return resp, nil
}

// Download streams an artifact this nimbus holds. The first chunk carries
// the artifact's size. A file found corrupted is deleted, and the call
// fails with codes.DataLoss; the caller tries another holder.
func (a *api) Download(req *nimbuspb.DownloadRequest, stream nimbuspb.Nimbus_DownloadServer) error {
	sha := req.GetSha256()
	r, err := a.n.blobs.Open(sha)
	switch {
	case errors.Is(err, blobstore.ErrInvalidKey):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, blobstore.ErrNotFound):
		return status.Errorf(codes.NotFound, "nimbus %s does not hold artifact %s", a.n.id, sha)
	case err != nil:
		return status.Error(codes.Internal, err.Error())
	}
	defer r.Close()
	buf := make([]byte, chunkSize)
	size := r.Size()
	for first := true; ; first = false {
		k, err := io.ReadFull(r, buf)
		if k > 0 || first {
			c := &nimbuspb.Chunk{Data: buf[:k]}
			if first {
				c.Size = size
			}
			if serr := stream.Send(c); serr != nil {
				return serr
			}
		}
		switch {
		case err == io.EOF, err == io.ErrUnexpectedEOF:
			return nil
		case errors.Is(err, blobstore.ErrCorrupt):
			a.n.log.Error("artifact corrupted on disk; deleting it", "sha256", sha, "err", err)
			r.Close()
			a.n.drop(stream.Context(), sha)
			poke(a.n.synced)
			return status.Error(codes.DataLoss, err.Error())
		case err != nil:
			return status.Error(codes.Internal, err.Error())
		}
	}
}

// Report keeps a supervisor's summary of its workers and its topology
// totals in memory, for List and Get. It never reaches etcd. Every
// nimbus takes it, the standbys too: each supervisor reports to all, so
// that any nimbus answers reads with every worker's state and the
// topologies' all-time counters, and a standby that takes over has them
// already.
func (a *api) Report(ctx context.Context, req *nimbuspb.ReportRequest) (*nimbuspb.ReportResponse, error) {
	if req.GetSupervisor() == "" {
		return nil, status.Error(codes.InvalidArgument, "nimbus: a report needs its supervisor's id")
	}
	for _, w := range req.GetWorkers() {
		if err := checkReport(w); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "nimbus: the report of supervisor %s, worker on port %d: %v",
				req.GetSupervisor(), w.GetPort(), err)
		}
	}
	for _, t := range req.GetTotals() {
		if t.GetTopology() == "" {
			return nil, status.Errorf(codes.InvalidArgument, "nimbus: the report of supervisor %s has totals that name no topology", req.GetSupervisor())
		}
		if err := checkReport(&nimbuspb.WorkerReport{Components: t.GetComponents()}); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "nimbus: the report of supervisor %s, totals of topology %s: %v",
				req.GetSupervisor(), t.GetTopology(), err)
		}
	}
	now := a.n.cfg.Now()
	a.n.mu.Lock()
	a.n.mu.reports[req.GetSupervisor()] = report{at: now, workers: req.GetWorkers()}
	a.n.mu.Unlock()
	a.n.windows.record(now, req.GetSupervisor(), req.GetWorkers(), req.GetTotals())
	return &nimbuspb.ReportResponse{}, nil
}
