package ui

import (
	"fmt"
	"strings"

	"github.com/gale-stream/gale/internal/metrics"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// parseWindow reads a window query parameter: Storm's values, "" for
// all time.
func parseWindow(v string) (metrics.Window, error) {
	if v == "" {
		v = metrics.AllTime
	}
	var ok []string
	for _, w := range metrics.Windows() {
		if w.Param == v {
			return w, nil
		}
		ok = append(ok, w.Param)
	}
	return metrics.Window{}, fmt.Errorf("window %q is not one the UI keeps: give %s (10 min, 3 h, 1 day, all time)", v, strings.Join(ok, ", "))
}

// windowOf is the window of nimbus's window_secs; all time if it is
// none of them.
func windowOf(secs int64) metrics.Window {
	ws := metrics.Windows()
	if i := metrics.WindowIndex(secs); i >= 0 {
		return ws[i]
	}
	return ws[len(ws)-1]
}

// topologyStats is topology/:id's topologyStats: the topology's totals
// over each window, from nimbus's TopologyInfo.windows.
func topologyStats(info *nimbuspb.TopologyInfo) []map[string]any {
	out := []map[string]any{}
	for _, ws := range info.GetWindows() {
		w := windowOf(ws.GetWindowSecs())
		out = append(out, map[string]any{
			"window":          w.Param,
			"windowPretty":    w.Pretty,
			"emitted":         ws.GetEmitted(),
			"transferred":     ws.GetTransferred(),
			"completeLatency": fmt.Sprintf("%.3f", latencyMillis(ws.GetCompleteLatency())),
			"acked":           ws.GetAcked(),
			"failed":          ws.GetFailed(),
		})
	}
	return out
}
