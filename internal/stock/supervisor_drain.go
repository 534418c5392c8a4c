package stock

import (
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gale-stream/gale/internal/cli"
	"github.com/gale-stream/gale/internal/supervisor"
)

// newSupervisorDrainCmd is `supervisor drain`: the supervisor running in
// a directory leaves the cluster once nimbus has moved its workers.
func newSupervisorDrainCmd() *cobra.Command {
	var dir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "drain --dir DIR [--json]",
		Short: "Take the supervisor running with --dir DIR out of the cluster: its workers move to other supervisors",
		Long: `Drain the supervisor running with --dir DIR, to decommission its machine
or take it down for long: the supervisor leaves the cluster at once (it
revokes its etcd lease), so nimbus moves its workers to the other
supervisors, as it does for a lost machine, without waiting for
nimbus.supervisor.timeout.secs. The supervisor starts no worker from then on
and stops each of its workers as its new assignment withdraws it from here;
trees in flight through a moved worker may time out and be replayed, as in a
rebalance. A topology that has nowhere else to go (no free slot elsewhere)
keeps its worker here, and the drain waits for it: free slots, or kill or
rebalance the topology.

The command asks the supervisor over a unix socket in DIR, prints the
workers still here as they change, and returns once none runs and none is
assigned here. Ctrl-C stops the waiting, not the drain. A drained supervisor
stays up, out of the cluster and idle, until it is stopped; started again, it
joins the cluster again. To decommission the machine:

  gale supervisor drain --dir /var/lib/gale/supervisor
  systemctl disable --now gale-supervisor

A plain stop (systemctl stop or restart, SIGTERM, kill -9) is not a drain:
the workers keep running, and a supervisor started again in DIR within
nimbus.supervisor.timeout.secs adopts them. --json prints the drained
supervisor's final state as one JSON document.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return cli.Usage(errors.New("--dir is required: the supervisor's state directory"))
			}
			w := cmd.OutOrStdout()
			var last supervisor.DrainStatus
			first := true
			err := supervisor.Drain(cmd.Context(), dir, func(st supervisor.DrainStatus) {
				last = st
				if asJSON {
					return
				}
				if first {
					first = false
					fmt.Fprintf(w, "supervisor %s left the cluster; nimbus moves its workers to other supervisors\n", st.Supervisor)
				}
				if st.Drained {
					return
				}
				fmt.Fprintf(w, "workers still here (%d):\n", len(st.Workers))
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "  PORT\tTOPOLOGY\tSTATE\tREASON")
				for _, wk := range st.Workers {
					fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\n", wk.Port, wk.Topology, wk.State, wk.Why)
				}
				tw.Flush()
			})
			if err != nil {
				if cmd.Context().Err() != nil {
					return fmt.Errorf("stopped waiting; the supervisor in %s goes on draining (gale supervisor status --dir %s)", dir, dir)
				}
				return err
			}
			if asJSON {
				return cli.WriteJSON(w, last)
			}
			fmt.Fprintf(w, "supervisor %s drained: no worker runs here. It stays out of the cluster until stopped; started again, it joins again.\n", last.Supervisor)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the supervisor's state `directory`")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the drained supervisor's state as one JSON document")
	return cmd
}
