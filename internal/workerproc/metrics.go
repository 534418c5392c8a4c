package workerproc

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/metrics/prom"
	"github.com/gale-stream/gale/internal/worker"
)

// KeyMetricsPort is the cluster key of the port a worker serves its own
// Prometheus /metrics on, on the host it listens for its peers on (int,
// default 0: a free port, which the worker reports in its heartbeats
// and the UI offers to Prometheus by its service discovery; -1: none;
// a fixed port suits one worker per host, since the others cannot bind
// it and serve none). internal/config registers and validates it.
const KeyMetricsPort = config.WorkerMetricsPort

// A worker's /metrics holds what only the worker knows, live, with no
// nimbus in between: its process (Go's go_* and process_* series: CPU,
// RSS, heap, collections, goroutines), its transport to its peers and
// its own tasks' counters per component; the series are
// internal/metrics/prom's (NewWorker). The cluster-wide numbers, summed
// over the workers, are the UI process's /metrics.

// metricsShutdown bounds the wait for scrapes in progress when the
// worker stops.
const metricsShutdown = 2 * time.Second

// serveMetrics serves w's /metrics on the host of listen at the port
// eff's KeyMetricsPort gives, and returns the port (0 for none) and a
// stop that ends the server and waits for it. A port it cannot bind is
// logged, and the worker runs on without /metrics.
func serveMetrics(eff *config.Effective, listen, topology, topologyID string, w worker.Handle, log *slog.Logger) (port int, stop func()) {
	want, _ := eff.Int(KeyMetricsPort)
	if want < 0 {
		return 0, func() {}
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		host = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(want)))
	if err != nil {
		log.Warn("cannot serve the worker's /metrics; running without (set worker.metrics.port to 0 for a free port, -1 for none)",
			"port", want, "err", err)
		return 0, func() {}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", prom.Handler(prom.NewWorker(topology, topologyID, w)))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("the worker's /metrics stopped", "err", err)
		}
	})
	port = ln.Addr().(*net.TCPAddr).Port
	log.Info("serving the worker's /metrics", "addr", ln.Addr().String())
	var once sync.Once
	return port, func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), metricsShutdown)
			defer cancel()
			if srv.Shutdown(ctx) != nil {
				srv.Close()
			}
			wg.Wait()
		})
	}
}
