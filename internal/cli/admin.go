package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gale-stream/gale/internal/nimbuspb"
)

// adminResult is what kill, activate, deactivate and rebalance print;
// --json prints it as is.
type adminResult struct {
	Action string `json:"action"`
	Name   string `json:"name"`
	// WaitSecs is the wait asked for; -1 is the topology's
	// topology.message.timeout.secs.
	WaitSecs  *int32           `json:"wait_secs,omitempty"`
	Workers   int32            `json:"workers,omitempty"`
	Executors map[string]int32 `json:"executors,omitempty"`
	Nimbus    string           `json:"nimbus"`
}

// adminCmd is a command that names one topology and makes one call.
type adminCmd struct {
	use, short, long string
	// flags binds the command's own flags; check validates them.
	flags func(*cobra.Command)
	check func(*cobra.Command) error
	call  func(cmd *cobra.Command, n nimbuspb.NimbusClient, name string, r *adminResult) error
}

func (a adminCmd) build() *cobra.Command {
	var f ClusterFlags
	var asJSON bool
	action := strings.Fields(a.use)[0]
	cmd := &cobra.Command{
		Use:   a.use,
		Short: a.short,
		Long:  a.long,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var errs []error
			if len(args) != 1 {
				errs = append(errs, fmt.Errorf("%q takes the name of one topology (gale list shows them), got %d arguments", cmd.CommandPath(), len(args)))
			}
			if a.check != nil {
				errs = append(errs, a.check(cmd))
			}
			if err := errors.Join(errs...); err != nil {
				return usageError{err}
			}
			name := args[0]
			ctx := cmd.Context()
			c, err := f.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			r := adminResult{Action: action, Name: name}
			if err := c.Call(ctx, func(n nimbuspb.NimbusClient) error { return a.call(cmd, n, name, &r) }); err != nil {
				return fmt.Errorf("%s %s: %w", action, name, err)
			}
			r.Nimbus = c.leader
			if asJSON {
				return WriteJSON(cmd.OutOrStdout(), r)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s %s: done (nimbus %s)\n", action, name, r.Nimbus)
			return err
		},
	}
	f.Bind(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document")
	if a.flags != nil {
		a.flags(cmd)
	}
	return cmd
}

// waitFlag binds -w: seconds to wait, -1 (the default) for the
// topology's topology.message.timeout.secs, as Storm.
func waitFlag(cmd *cobra.Command, wait *int) {
	cmd.Flags().IntVarP(wait, "wait", "w", -1, "seconds between deactivating the spouts and going on; -1 is the topology's topology.message.timeout.secs")
}

func checkWait(cmd *cobra.Command, wait int) error {
	if cmd.Flags().Changed("wait") && wait < 0 {
		return fmt.Errorf("-w must be ≥ 0 seconds, got %d", wait)
	}
	return nil
}

func newKillCmd() *cobra.Command {
	var wait int
	return adminCmd{
		use:   "kill NAME",
		short: "Kill a topology: deactivate its spouts, wait for its trees to drain, stop its workers",
		long: `Kill the topology NAME, as Storm does: nimbus deactivates its spouts, waits
-w seconds (by default the topology's topology.message.timeout.secs) for the
trees in flight to complete, then stops its workers and forgets it.`,
		flags: func(cmd *cobra.Command) { waitFlag(cmd, &wait) },
		check: func(cmd *cobra.Command) error { return checkWait(cmd, wait) },
		call: func(cmd *cobra.Command, n nimbuspb.NimbusClient, name string, r *adminResult) error {
			w := int32(wait)
			r.WaitSecs = &w
			_, err := n.Kill(cmd.Context(), &nimbuspb.KillRequest{Name: name, WaitSecs: w})
			return err
		},
	}.build()
}

func newActivateCmd() *cobra.Command {
	return adminCmd{
		use:   "activate NAME",
		short: "Activate a topology's spouts",
		long:  `Activate the spouts of the topology NAME, deactivated by "deactivate".`,
		call: func(cmd *cobra.Command, n nimbuspb.NimbusClient, name string, _ *adminResult) error {
			_, err := n.Activate(cmd.Context(), &nimbuspb.ActivateRequest{Name: name})
			return err
		},
	}.build()
}

func newDeactivateCmd() *cobra.Command {
	return adminCmd{
		use:   "deactivate NAME",
		short: "Deactivate a topology's spouts (its workers keep running)",
		long: `Deactivate the spouts of the topology NAME: they stop emitting, the trees in
flight complete, and the workers keep running until "activate" or "kill".`,
		call: func(cmd *cobra.Command, n nimbuspb.NimbusClient, name string, _ *adminResult) error {
			_, err := n.Deactivate(cmd.Context(), &nimbuspb.DeactivateRequest{Name: name})
			return err
		},
	}.build()
}

func newRebalanceCmd() *cobra.Command {
	var wait, workers int
	var execs []string
	var parsed map[string]int32
	return adminCmd{
		use:   "rebalance NAME",
		short: "Move a topology's executors, with new worker and executor counts if asked",
		long: `Rebalance the topology NAME, as Storm does: nimbus deactivates its spouts,
waits -w seconds (by default topology.message.timeout.secs), reassigns its
executors over -n workers (default: unchanged) with -e COMPONENT=N
executors for each component named (at most its tasks), and reactivates it
if it was active.`,
		flags: func(cmd *cobra.Command) {
			waitFlag(cmd, &wait)
			cmd.Flags().IntVarP(&workers, "num-workers", "n", 0, "worker processes (default: unchanged)")
			cmd.Flags().StringArrayVarP(&execs, "executor", "e", nil, "executors of a component, `COMPONENT=N` (repeatable)")
		},
		check: func(cmd *cobra.Command) error {
			errs := []error{checkWait(cmd, wait)}
			if cmd.Flags().Changed("num-workers") && workers < 1 {
				errs = append(errs, fmt.Errorf("-n must be ≥ 1 worker, got %d", workers))
			}
			parsed = make(map[string]int32)
			for _, e := range execs {
				k, v, ok := strings.Cut(e, "=")
				n, err := strconv.Atoi(v)
				switch {
				case !ok || k == "":
					errs = append(errs, fmt.Errorf("-e wants COMPONENT=N, got %q", e))
				case err != nil || n < 1:
					errs = append(errs, fmt.Errorf("-e %s: want a whole number of executors ≥ 1, got %q", k, v))
				case parsed[k] != 0:
					errs = append(errs, fmt.Errorf("-e %s is given twice", k))
				default:
					parsed[k] = int32(n)
				}
			}
			return errors.Join(errs...)
		},
		call: func(cmd *cobra.Command, n nimbuspb.NimbusClient, name string, r *adminResult) error {
			w := int32(wait)
			r.WaitSecs, r.Workers = &w, int32(workers)
			if len(parsed) > 0 {
				r.Executors = parsed
			}
			_, err := n.Rebalance(cmd.Context(), &nimbuspb.RebalanceRequest{
				Name: name, WaitSecs: w, NumWorkers: int32(workers), Executors: parsed,
			})
			return err
		},
	}.build()
}
