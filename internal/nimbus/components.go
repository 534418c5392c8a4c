package nimbus

import (
	"fmt"

	"github.com/gale-stream/gale/internal/metrics/components"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// sumComponents sums the workers' per-component counters by component,
// in component id order (components.Sum).
func sumComponents(ws []*nimbuspb.WorkerReport) []*nimbuspb.ComponentStats {
	lists := make([][]*nimbuspb.ComponentStats, len(ws))
	for i, w := range ws {
		lists[i] = w.GetComponents()
	}
	return components.Sum(lists...)
}

// checkReport checks a worker report's latency histograms, naming the
// one at fault.
func checkReport(w *nimbuspb.WorkerReport) error {
	hs := []*nimbuspb.LatencyHistogram{w.GetCompleteLatency()}
	names := []string{"complete_latency"}
	for _, c := range w.GetComponents() {
		hs = append(hs, c.GetCompleteLatency())
		names = append(names, fmt.Sprintf("component %q complete_latency", c.GetComponent()))
	}
	for i, h := range hs {
		if h == nil {
			continue
		}
		if _, err := components.LatencyOf(h); err != nil {
			return fmt.Errorf("%s: %w", names[i], err)
		}
	}
	return nil
}
