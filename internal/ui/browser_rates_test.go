package ui

import (
	"context"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/gale-stream/gale/internal/nimbuspb"
)

// simNimbus is a Nimbus whose reports advance with the UI's reads: before
// each Get it reports the workers as of one more simulated second, so
// the page's polls see a supervisor's reports come every few polls, as
// they do on a cluster, on a machine however busy.
type simNimbus struct {
	Nimbus
	report func(ctx context.Context, sim time.Duration) error

	mu  sync.Mutex
	sim time.Duration
}

func (s *simNimbus) Get(ctx context.Context, in *nimbuspb.GetRequest, opts ...grpc.CallOption) (*nimbuspb.TopologyInfo, error) {
	s.mu.Lock()
	s.sim += time.Second
	err := s.report(ctx, s.sim)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return s.Nimbus.Get(ctx, in, opts...)
}

// TestWebUIRateOnEveryPoll: the topology page's throughput, for a steady
// 100 trees/s acked by two workers reported every 5 s out of phase, reads
// 90-110/s on every poll: in the chart's points (one a poll) and in the
// rate shown.
func TestWebUIRateOnEveryPoll(t *testing.T) {
	ev := newEnv(t)
	base := time.Now().Add(-2 * time.Minute)
	started := base.Add(-5 * time.Minute)
	workers := []steadyWorker{
		{port: 6700, rate: 60, batch: 8, phase: 0, period: 5 * time.Second},
		{port: 6701, rate: 40, batch: 8, phase: 2500 * time.Millisecond, period: 5 * time.Second},
	}
	sim := &simNimbus{Nimbus: ev.api, report: func(ctx context.Context, at time.Duration) error {
		var ws []*nimbuspb.WorkerReport
		for _, w := range workers {
			r, _ := w.at(ev, base, started, at+workers[1].phase) // both have reported
			ws = append(ws, r)
		}
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
		_, err := ev.api.Report(ctx, &nimbuspb.ReportRequest{Supervisor: ev.sups, Workers: ws})
		return err
	}}
	h, err := New(Config{Nimbus: sim})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	b := browser(t)
	if err := chromedp.Do(b, chromedp.Navigate(srv.URL+"/topology.html?id=wordcount")); err != nil {
		t.Fatal(err)
	}
	const polls = 8
	ctx, cancel := context.WithTimeout(b, 3*time.Minute)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`gale.charts !== undefined && gale.charts.throughput.points.length >= `+strconv.Itoa(polls))); err != nil {
		t.Fatalf("the page drew no %d points: %v", polls, err)
	}
	acked := eval[[]float64](t, b, `gale.charts.throughput.points.map(p => p.values[0])`)
	for i, v := range acked {
		if v < 90 || v > 110 {
			t.Errorf("poll %d: the chart's acked/s %.1f, want 90-110 (a steady 100/s); all: %v", i+1, v, acked)
		}
	}
	if now := eval[string](t, b, text("now-throughput")); !strings.HasSuffix(now, "/s acked") || !(strings.HasPrefix(now, "9") || strings.HasPrefix(now, "10") || strings.HasPrefix(now, "110")) {
		t.Errorf("the throughput shown: %q, want 90-110/s acked", now)
	}
	if got := eval[string](t, b, `document.getElementById("topology-stats").textContent`); !strings.Contains(got, "Message timeout7 s") {
		t.Errorf("the stats: %q, want the message timeout, 7 s", got)
	}
	shot(t, b, "topology-rates.png")
}
