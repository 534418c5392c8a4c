package ui

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"

	"github.com/gale-stream/gale/internal/nimbuspb"
)

// twoNimbuses answers each read from one of two nimbuses in turn, the
// second a report behind the first: the UI reading from another nimbus
// once the one it read from died.
type twoNimbuses struct {
	Nimbus
	mu    sync.Mutex
	acked []int64 // what the next Lists and Gets answer, in turn
}

func (n *twoNimbuses) now() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.acked[0]
}

func (n *twoNimbuses) next() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.acked = n.acked[1:]
}

func (n *twoNimbuses) ClusterInfo(context.Context, *nimbuspb.ClusterInfoRequest, ...grpc.CallOption) (*nimbuspb.ClusterInfoResponse, error) {
	return &nimbuspb.ClusterInfoResponse{}, nil
}

func (n *twoNimbuses) List(context.Context, *nimbuspb.ListRequest, ...grpc.CallOption) (*nimbuspb.ListResponse, error) {
	return &nimbuspb.ListResponse{Topologies: []*nimbuspb.TopologySummary{{Id: "wc-1", Name: "wc", Status: "ACTIVE", Acked: n.now()}}}, nil
}

func (n *twoNimbuses) Get(context.Context, *nimbuspb.GetRequest, ...grpc.CallOption) (*nimbuspb.TopologyInfo, error) {
	return &nimbuspb.TopologyInfo{Components: []*nimbuspb.ComponentStats{{Component: "s", Kind: "spout", Acked: n.now()}}}, nil
}

// TestMetricsCountersNeverGoBack: a scrape answered by a nimbus a
// report behind the last one shows the topology's and the component's
// counters at the highest they were, not lower (which Prometheus would
// take for a reset).
func TestMetricsCountersNeverGoBack(t *testing.T) {
	nb := &twoNimbuses{acked: []int64{500, 300, 600}}
	h, err := New(Config{Nimbus: nb})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, want := range []string{"500", "500", "600"} {
		resp, err := http.Get(srv.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, series := range []string{
			`gale_topology_acked_total{topology="wc",topology_id="wc-1"} `,
			`gale_component_acked_total{component="s",kind="spout",topology="wc",topology_id="wc-1"} `,
		} {
			if !strings.Contains(string(b), series+want+"\n") {
				t.Errorf("nimbus answering %d: /metrics has no %s%s", nb.now(), series, want)
			}
		}
		nb.next()
	}
}
