// Package galecli makes a Go program a Gale command line that knows its
// own topologies. A program that defines topologies hands them to Main
// from its main function:
//
//	func main() {
//		os.Exit(galecli.Main(galecli.Topology{
//			Name:  "clicks",
//			Short: "count clicks per page",
//			Build: buildClicks, // func(params map[string]string) (*gale.Topology, gale.Config, error)
//		}))
//	}
//
// The program then has Gale's subcommands, run with its own components:
//
//	clicks run clicks                  # in this process, until Ctrl-C
//	clicks run clicks --workers 2      # in two worker processes of this binary
//	clicks run clicks --duration 10s --json
//	clicks run clicks --param rate=1000
//
// config and version, and the clients of a cluster (submit, list, kill,
// activate, deactivate, rebalance, doctor, monitor, ui), which find
// nimbus through nimbus.seeds in gale.yaml (--file) or --nimbus
// HOST:PORT:
//
//	clicks submit clicks -c topology.workers=4   # uploads this binary as the workers' artifact
//	clicks list
//	clicks kill clicks -w 10
//
// Workers on the cluster run the submitted binary, so it must be built for
// the supervisors' OS and architecture. The program does not carry the
// cluster's servers (nimbus, supervisor, etcd), dev, demo or the benches:
// those are the stock gale binary's (cmd/gale), which runs the cluster,
// and which is such a program too, with Gale's built-in examples (gale
// submit --example wordcount).
//
// Worker processes are this same binary, started by the launcher with
// the hidden worker subcommand. A worker calls main again, hence Main with
// the same topologies, and rebuilds the one it runs by name with the same
// parameters: Main must be given the same topologies in every process of
// a program.
package galecli

import (
	"os"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/cli"
)

// Topology is a topology the command line knows by name.
type Topology struct {
	// Name is what `run NAME` and worker processes know the topology
	// by: unique in the program, without spaces, '=' or '/'. It is also
	// the name the topology runs under.
	Name string
	// Short is a one-line description, for `run --help`.
	Short string
	// Build builds the topology and its topology config layer from the
	// parameters given with `run --param KEY=VALUE` (an empty map when
	// there are none). It is called in the process that runs `run`, and
	// again in every worker process with the same parameters; each call
	// must build the same topology. It only builds: connections to other
	// systems belong in the spouts' Open and bolts' Prepare, where
	// TopologyContext.Context ends them at shutdown. Build should reject a
	// parameter it does not know with an error that names it; `run`
	// reports that error and exits 1.
	Build func(params map[string]string) (*gale.Topology, gale.Config, error)
}

// Main runs the command line in os.Args with the given topologies and
// returns the exit code, for the caller to exit with (os.Exit(Main(...))):
// 0 on success, 1 when the command ran and failed, 2 for a bad command
// line (an unknown command, flag or topology name). Topologies without a
// name or Build function, or two with one name, make every command fail
// with exit code 1 and a message naming them. Main writes to os.Stdout
// and os.Stderr, and names the program after os.Args[0] in messages.
//
// The first SIGINT or SIGTERM asks the command to wind down: `run` stops
// the spouts, drains the trees in flight and prints its report. A second
// one kills the program.
func Main(topologies ...Topology) int {
	opts := cli.Options{Name: cli.ProgramName(os.Args[0])}
	for _, t := range topologies {
		opts.Topologies = append(opts.Topologies, cli.Topology{Name: t.Name, Short: t.Short, Build: t.Build})
	}
	return cli.Run(os.Args[1:], os.Stdout, os.Stderr, opts)
}
