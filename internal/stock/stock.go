// Package stock is what the stock gale binary (cmd/gale) has beyond a
// user's program: the servers of a cluster (nimbus, supervisor, ui and
// the embedded etcd server), dev, demo, the benches and the test
// topologies of the benches and of doctor (doctor-faults, bench-kafka).
// cmd/gale imports it; galecli does not, so a user's binary carries run,
// submit, worker and the clients of a cluster, and links no etcd server
// and no fake Kafka broker.
//
// A supervisor runs the worker subcommand of the submitted binary, so a
// topology submitted with the stock binary (gale submit --example
// wordcount) runs on stock workers, which know every topology here, and
// a user's topology runs on its own program's workers.
package stock

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/gale-stream/gale/examples/wordcount"
	"github.com/gale-stream/gale/internal/bench/doctorfaults"
	benchfail "github.com/gale-stream/gale/internal/bench/failover"
	benchkafka "github.com/gale-stream/gale/internal/bench/kafka"
	benchtopo "github.com/gale-stream/gale/internal/bench/wordcount"
	"github.com/gale-stream/gale/internal/cli"
	"github.com/gale-stream/gale/internal/workerproc"
)

func init() {
	// The bench's own topology, which `bench --workers` starts in
	// worker processes of this binary.
	workerproc.Register(benchtopo.WorkerTopology, benchtopo.WorkerFactory)
}

// Topologies are the stock binary's topologies, for `gale run` and
// `gale submit`.
var Topologies = []cli.Topology{
	{Name: "wordcount", Short: "the classic word count: sentences → split → count", Build: wordcount.Build},
	{Name: "bench-wordcount", Short: "the bench's word count, paced with -p rate=N", Build: benchtopo.Build},
	{Name: doctorfaults.TopologyName, Short: "source → parse → work with faults set by -p delay=D, max-spout-pending=N, timeout=S, rate=R, fail-every=N, hot-key=F, live-mb=N, no-ack=B (gale doctor's staged faults)", Build: doctorfaults.Build},
	{Name: benchkafka.TopologyName, Short: "Kafka → decode → Kafka, for the crash tests: -p brokers=H:P -p topic=T -p group=G -p output=T", Build: benchkafka.Build},
}

// failoverTopology is the failover bench's word count, which the
// failover and chaos benches submit: known to the stock binary's workers
// (Options.Reserved) but listed by no command.
var failoverTopology = cli.Topology{Name: benchfail.TopologyName, Short: "the failover bench's word count (internal)", Build: benchfail.Build}

// Options adds the stock binary's commands and reserved topologies to
// opts.
func Options(opts cli.Options) cli.Options {
	opts.Commands = append(opts.Commands,
		func(*cli.Options) *cobra.Command { return newBenchCmd() },
		newNimbusCmd, newSupervisorCmd,
		newEtcdCmd, newDevCmd, newDemoCmd)
	opts.Reserved = append(opts.Reserved, cli.Reserved{Topology: failoverTopology, By: "bench failover"})
	return opts
}

// Main runs the stock command line in os.Args and returns the exit code,
// as galecli.Main does.
func Main() int {
	opts := Options(cli.Options{Name: cli.ProgramName(os.Args[0]), Topologies: Topologies})
	return cli.Run(os.Args[1:], os.Stdout, os.Stderr, opts)
}
