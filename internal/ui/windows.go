package ui

import (
	"fmt"
	"strings"

	"github.com/gale-stream/gale/internal/nimbuspb"
)

// stormWindow is one of the Storm UI's rolling windows: its window
// parameter and field, nimbus's GetRequest.window_secs, and Storm's
// windowPretty.
type stormWindow struct {
	param  string
	secs   int64
	pretty string
}

// allTime is Storm's window of all time, the default.
const allTime = ":all-time"

// stormWindows are the windows, as nimbus keeps them and Storm's UI
// lists them: 10 minutes, 3 hours, 1 day, all time.
var stormWindows = []stormWindow{
	{"600", 600, "10m 0s"},
	{"10800", 10800, "3h 0m 0s"},
	{"86400", 86400, "1d 0h 0m 0s"},
	{allTime, 0, "All time"},
}

// parseWindow reads a window query parameter: Storm's values, "" for
// all time.
func parseWindow(v string) (stormWindow, error) {
	if v == "" {
		v = allTime
	}
	for _, w := range stormWindows {
		if w.param == v {
			return w, nil
		}
	}
	var ok []string
	for _, w := range stormWindows {
		ok = append(ok, w.param)
	}
	return stormWindow{}, fmt.Errorf("window %q is not one the UI keeps: give %s (10 min, 3 h, 1 day, all time)", v, strings.Join(ok, ", "))
}

// windowOf is the window of nimbus's window_secs.
func windowOf(secs int64) stormWindow {
	for _, w := range stormWindows {
		if w.secs == secs {
			return w
		}
	}
	return stormWindows[len(stormWindows)-1]
}

// topologyStats is topology/:id's topologyStats: the topology's totals
// over each window, from nimbus's TopologyInfo.windows.
func topologyStats(info *nimbuspb.TopologyInfo) []map[string]any {
	out := []map[string]any{}
	for _, ws := range info.GetWindows() {
		w := windowOf(ws.GetWindowSecs())
		out = append(out, map[string]any{
			"window":          w.param,
			"windowPretty":    w.pretty,
			"emitted":         ws.GetEmitted(),
			"transferred":     ws.GetTransferred(),
			"completeLatency": fmt.Sprintf("%.3f", latencyMillis(ws.GetCompleteLatency())),
			"acked":           ws.GetAcked(),
			"failed":          ws.GetFailed(),
		})
	}
	return out
}
