package stock

import (
	"os"

	"github.com/spf13/cobra"

	benchcoord "github.com/gale-stream/gale/internal/bench/coordination"
	"github.com/gale-stream/gale/internal/cli"
	"github.com/gale-stream/gale/internal/transport"
)

func newCoordinationCmd() *cobra.Command {
	cfg := benchcoord.DefaultConfig()
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "coordination",
		Short: "Benchmark the cluster's coordination: a real etcd and nimbus facing thousands of simulated supervisors",
		Long: `Benchmark the cluster's coordination, the paper's ZooKeeper experiment at
internet scale: a real etcd and a real nimbus, each a child process of this
program, face --supervisors simulated supervisors in this process. Each holds
its own etcd lease (TTL --supervisor-timeout, kept alive by keep-alives) and
sends its summary of its --workers-per workers to nimbus over the real Report
call every --report-every. No worker runs.

It goes through four phases, printing each on stderr as it goes:
  join          every supervisor takes its lease and membership;
  schedule      a topology of --topology-workers workers is submitted, and
                timed until its assignment is in etcd; then (--fill) a filler
                topology takes every slot left but one supervisor's worth, so
                that the reports carry a worker for nearly every slot;
  steady state  for --steady: etcd's raft index and revision at both ends
                (Gale writes nothing when nothing changes: they do not move),
                nimbus's CPU (Linux's /proc), the reports per second and their
                bytes (protobuf, and TCP bytes with gRPC's framing);
  detection     one supervisor running the topology's workers dies (its
                keep-alives and reports stop; its lease is not revoked), timed
                until its lease expires and until nimbus's new assignment
                moves its workers.

Then it prints a table on stdout (--json: one JSON document). The report is
printed however the run ends; when it went wrong it says what in its "error",
and gale exits with status 1.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			cfg.Exe = exe
			cfg.GaleVersion, cfg.WireVersion = cli.CurrentVersion().Version, int(transport.ProtocolVersion)
			cfg.Log = cmd.ErrOrStderr()
			if err := cfg.Validate(); err != nil {
				return cli.Usage(err)
			}
			r, err := benchcoord.Run(cmd.Context(), cfg)
			var werr error
			if asJSON {
				werr = r.WriteJSON(cmd.OutOrStdout())
			} else {
				werr = r.WriteTable(cmd.OutOrStdout())
			}
			if err != nil {
				return err
			}
			return werr
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Supervisors, "supervisors", cfg.Supervisors, "simulated supervisors")
	f.IntVar(&cfg.WorkersPer, "workers-per", cfg.WorkersPer, "worker slots of each supervisor")
	f.IntVar(&cfg.TopologyWorkers, "topology-workers", cfg.TopologyWorkers, "topology.workers of the topology scheduled (at most the slots less one supervisor's)")
	f.BoolVar(&cfg.Fill, "fill", cfg.Fill, "submit a filler topology onto the slots left but one supervisor's worth, so that nearly every slot reports a worker")
	f.DurationVar(&cfg.Steady, "steady", cfg.Steady, "how long the steady state is measured")
	f.DurationVar(&cfg.Settle, "settle", cfg.Settle, "how long to wait between the last assignment and the steady state (< 0: one --report-every, so that every supervisor has reported its workers)")
	f.DurationVar(&cfg.SupervisorTimeout, "supervisor-timeout", cfg.SupervisorTimeout, "nimbus.supervisor.timeout.secs: the TTL of each supervisor's lease, whole seconds")
	f.DurationVar(&cfg.ReportEvery, "report-every", cfg.ReportEvery, "supervisor.heartbeat.frequency.secs: how often each supervisor reports to nimbus, whole seconds")
	f.IntVar(&cfg.Conns, "conns", cfg.Conns, "gRPC connections the supervisors' reports share (0: one each, as real supervisors have)")
	f.IntVar(&cfg.EtcdClients, "etcd-clients", cfg.EtcdClients, "etcd clients the supervisors' leases share (each lease is its own)")
	f.BoolVar(&asJSON, "json", false, "print one JSON document on stdout (the progress still goes to stderr)")
	return cmd
}
