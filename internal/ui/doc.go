// Package ui serves the Storm UI's REST API under /api/v1, with Storm's
// paths and field names, a Prometheus /metrics endpoint and a web UI at
// /, for the
// `gale ui` process (and the one `gale dev` and `gale demo` run). Every
// answer is built from the nimbus gRPC API at the time of the request:
// the package keeps no state of its own, so any number of UI processes
// may serve one cluster and a restarted one shows the same numbers.
//
// # Which process holds what
//
// The UI process's /metrics holds the cluster's and each topology's
// totals as nimbus knows them from the supervisors' reports
// (gale_topology_*, gale_cluster_*) and each component's, summed over
// its workers (gale_component_*, gale_spout_failed_by_reason_total by
// bolt, timeout and shutdown, gale_bolt_executed_total,
// gale_bolt_capacity_ratio, gale_bolt_execute_latency_seconds), collected
// from nimbus on each scrape (List, then a Get per topology) by
// internal/metrics/prom/cluster's collector, and the Go runtime metrics
// of the UI process itself. One scrape target thus answers "is the
// cluster, or a topology, healthy" without the scraper knowing where the
// workers run, and without a pushgateway. Each worker serves its own
// /metrics (internal/metrics/prom's NewWorker: its per-task counters, its
// transport and its process), which the UI lists for Prometheus's service
// discovery at /api/v1/metrics/targets, so that nimbus's view stays a
// summary.
//
// # The web UI
//
// The pages in static/ (embedded; plain HTML, CSS and JavaScript, no
// build step) run in the browser and read the REST API like any other
// client, polling it every 2 s: the server renders nothing and keeps no
// session. Actions send the token the user gives the page, as the
// Authorization header below.
//
// # Authentication
//
// Reads need no token, as nimbus's reads do not. A mutation (activate,
// deactivate, rebalance, kill) forwards the caller's own
// "Authorization: Bearer TOKEN" header to nimbus, which checks it: the UI
// holds no token and never lends one, so reaching the UI's port does not
// grant the right to kill a topology where nimbus.auth.token is set. A
// refused mutation answers 401 with Storm's error shape.
//
// Handler's methods are safe for concurrent use; the Nimbus it is given
// must be too.
package ui
