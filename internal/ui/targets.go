package ui

import (
	"cmp"
	"net"
	"net/http"
	"slices"
	"strconv"

	"github.com/gale-stream/gale/internal/nimbuspb"
)

// target is one group of Prometheus's HTTP service discovery
// (http_sd_configs): the addresses to scrape and the labels to attach.
type target struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// metricsTargets answers /api/v1/metrics/targets: every running worker's
// own /metrics (WorkerReport.metrics_port, on its host) in the format of
// Prometheus's http_sd_configs, one group per worker, labelled with its
// supervisor and slot, and with its topology as __meta_gale_topology and
// __meta_gale_topology_id for relabelling (the workers' series carry
// their topology themselves). A topology killed between the list and its
// Get is left out; a nimbus that cannot be reached fails the request, so
// that Prometheus keeps the targets it had.
func (h *Handler) metricsTargets(w http.ResponseWriter, r *http.Request) {
	list, err := h.nimbus.List(r.Context(), &nimbuspb.ListRequest{})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := []target{}
	for _, t := range list.GetTopologies() {
		info, err := h.nimbus.Get(r.Context(), &nimbuspb.GetRequest{Name: t.GetId()})
		if err != nil {
			continue
		}
		for _, wr := range info.GetWorkers() {
			if wr.GetMetricsPort() <= 0 || wr.GetPid() == 0 {
				continue
			}
			out = append(out, target{
				Targets: []string{net.JoinHostPort(wr.GetHost(), strconv.Itoa(int(wr.GetMetricsPort())))},
				Labels: map[string]string{
					"supervisor":              wr.GetSupervisor(),
					"slot":                    strconv.Itoa(int(wr.GetPort())),
					"__meta_gale_topology":    t.GetName(),
					"__meta_gale_topology_id": t.GetId(),
				},
			})
		}
	}
	slices.SortFunc(out, func(a, b target) int { return cmp.Compare(a.Targets[0], b.Targets[0]) })
	writeJSON(w, http.StatusOK, out)
}
