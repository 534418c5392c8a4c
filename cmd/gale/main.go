// Command gale is the stock Gale command line (internal/cli through
// galecli): Gale's subcommands, with the built-in example topologies for
// `gale run`.
package main

import (
	"os"

	"github.com/gale-stream/gale/examples/wordcount"
	"github.com/gale-stream/gale/galecli"
	"github.com/gale-stream/gale/internal/benchkafka"
	"github.com/gale-stream/gale/internal/benchtopo"
	"github.com/gale-stream/gale/internal/doctortopo"
)

func main() {
	os.Exit(galecli.Main(
		galecli.Topology{Name: "wordcount", Short: "the classic word count: sentences → split → count", Build: wordcount.Build},
		galecli.Topology{Name: "bench-wordcount", Short: "the bench's word count, paced with -p rate=N", Build: benchtopo.Build},
		galecli.Topology{Name: doctortopo.TopologyName, Short: "source → parse → work with faults set by -p delay=D, max-spout-pending=N, timeout=S, rate=R, fail-every=N, hot-key=F, live-mb=N, no-ack=B (gale doctor's staged faults)", Build: doctortopo.Build},
		galecli.Topology{Name: benchkafka.TopologyName, Short: "Kafka → decode → Kafka, for the crash tests: -p brokers=H:P -p topic=T -p group=G -p output=T", Build: benchkafka.Build},
	))
}
