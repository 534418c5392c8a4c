// Package metrics is the one home of Gale's numbers: a running
// topology's spout and bolt counters (Spout, Bolt, Stream, Executor,
// Error) as the runtime publishes them, `run`'s report and the worker
// heartbeats carry them and bridge.SpoutStats and bridge.BoltStats read
// them out of package gale; the complete-latency histogram (Latency,
// LatencyRecorder) whose bucket layout is the nimbus API's
// LatencyHistogram; a bolt executor's capacity over a sliding window
// (Capacity);
// rates and means between two readings of counters (Delta, Rate,
// MeanNanos, MeanSince, LatencySince); and the rolling windows Storm's UI
// shows, 10 minutes, 3 hours, 1 day and all time (Windows), with the
// tiered snapshots a window is measured from (Snapshots).
//
// It imports nothing of Gale's and no protocol buffers, so the root
// package links it. Below it:
//
//   - internal/metrics/components: the counters as the nimbus API
//     carries them (nimbuspb.ComponentStats): summed over workers,
//     subtracted for a window, held at their highest, the gauges apart.
//   - internal/metrics/prom: the Prometheus exposition both /metrics
//     endpoints share, and a worker process's own collector.
//   - internal/metrics/prom/cluster: the UI process's collector, the
//     cluster read from nimbus on each scrape.
//
// A counter a user sees never goes back: a reading whose counter is
// lower than the one before is another process's (a worker started
// again), and every difference here counts it as 0, never negative.
package metrics
