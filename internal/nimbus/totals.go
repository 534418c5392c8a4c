package nimbus

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/gale-stream/gale/internal/nimbuspb"
)

// A nimbus that starts knows nothing of the supervisors gone before it
// started (a machine lost): their contributions to the topologies'
// totals live in the other nimbuses' memory only. So it asks each other
// nimbus once for what it holds (Totals) and keeps the largest of each,
// as it does of the reports. Until that is done, or the supervisor
// timeout has passed, it refuses reads as a standby (heardAll).

// syncTimeout bounds the start's reads: the members, and each peer's
// Totals.
const syncTimeout = 5 * time.Second

// syncTotals takes every other nimbus's totals into this one's, then
// marks the windows synced. It runs once, at the start.
func (n *Nimbus) syncTotals(ctx context.Context) {
	defer n.windows.markSynced()
	rctx, cancel := context.WithTimeout(ctx, syncTimeout)
	nims, err := n.store.Nimbuses(rctx)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			n.log.Warn("cannot read the nimbus members to take their totals", "err", err)
		}
		return
	}
	creds, err := n.clientCreds()
	if err != nil {
		n.log.Error("cannot take the other nimbuses' totals", "err", err)
		return
	}
	opt := grpc.WithTransportCredentials(insecure.NewCredentials())
	if creds != nil {
		opt = grpc.WithTransportCredentials(creds)
	}
	// Totals needs the cluster's token, as Report does: what it returns
	// is merged into this nimbus's counters.
	tok, err := n.peerCredentials()
	if err != nil {
		n.log.Error("cannot take the other nimbuses' totals", "err", err)
		return
	}
	for _, m := range nims {
		if m.ID == n.id {
			continue
		}
		conn, err := grpc.NewClient(m.Addr, opt, grpc.WithPerRPCCredentials(tok))
		if err != nil {
			n.log.Warn("cannot take a nimbus's totals", "peer", m.ID, "addr", m.Addr, "err", err)
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, syncTimeout)
		resp, err := nimbuspb.NewNimbusClient(conn).Totals(rctx, &nimbuspb.TotalsRequest{})
		cancel()
		conn.Close()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			n.log.Warn("cannot take a nimbus's totals", "peer", m.ID, "addr", m.Addr, "err", err)
			continue
		}
		for _, r := range resp.GetSupervisors() {
			if r.GetSupervisor() == "" || checkTotals(r) != nil {
				continue // not from a nimbus of this version
			}
			n.windows.merge(n.cfg.Now(), r.GetSupervisor(), r.GetTotals())
		}
		n.log.Info("took a nimbus's totals", "peer", m.ID, "supervisors", len(resp.GetSupervisors()))
	}
}

// checkTotals checks the histograms of a report's totals.
func checkTotals(r *nimbuspb.ReportRequest) error {
	for _, t := range r.GetTotals() {
		if err := checkReport(&nimbuspb.WorkerReport{Components: t.GetComponents()}); err != nil {
			return err
		}
	}
	return nil
}

// Totals returns the supervisors' totals this nimbus holds, for a nimbus
// that starts (syncTotals).
func (a *api) Totals(context.Context, *nimbuspb.TotalsRequest) (*nimbuspb.TotalsResponse, error) {
	return &nimbuspb.TotalsResponse{Supervisors: a.n.windows.contributions()}, nil
}

// merge raises supervisor's contributions to totals, as a report's
// totals do, without touching its workers.
func (w *windows) merge(now time.Time, supervisor string, totals []*nimbuspb.TopologyTotals) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range totals {
		if len(t.GetComponents()) == 0 {
			continue
		}
		h, c := w.contributionLocked(now, t.GetTopology(), supervisor)
		c.raise(t.GetComponents())
		h.snapshot(now)
	}
}

// contributions are the supervisors' contributions, one ReportRequest
// per supervisor (in id order) with its totals (in topology order).
func (w *windows) contributions() []*nimbuspb.ReportRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	by := make(map[string]*nimbuspb.ReportRequest)
	for _, id := range sortedKeys(w.mu.topologies) {
		h := w.mu.topologies[id]
		for _, sup := range sortedKeys(h.sups) {
			c := h.sups[sup]
			if len(c.high) == 0 {
				continue
			}
			r := by[sup]
			if r == nil {
				r = &nimbuspb.ReportRequest{Supervisor: sup}
				by[sup] = r
			}
			r.Totals = append(r.Totals, &nimbuspb.TopologyTotals{Topology: id, Components: c.high})
		}
	}
	out := make([]*nimbuspb.ReportRequest, 0, len(by))
	for _, sup := range sortedKeys(by) {
		out = append(out, by[sup])
	}
	return out
}

// markSynced records that the start's sync is over.
func (w *windows) markSynced() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mu.synced = true
}

// isSynced reports whether the start's sync is over.
func (w *windows) isSynced() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.synced
}
