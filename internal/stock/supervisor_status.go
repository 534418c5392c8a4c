package stock

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/gale-stream/gale/internal/nimbuspb"
	"github.com/gale-stream/gale/internal/supervisor"
	"github.com/spf13/cobra"

	"github.com/gale-stream/gale/internal/cli"
)

// supervisorStatus is what supervisor status --json prints.
type supervisorStatus struct {
	Supervisor string         `json:"supervisor"`
	Workers    []workerStatus `json:"workers"`
}

// workerStatus is one worker of a supervisor's status: a running worker,
// or a desired one that does not run (pid 0, with the reason).
type workerStatus struct {
	Topology        string `json:"topology"`
	Port            int32  `json:"port"`
	PID             int32  `json:"pid"`
	State           string `json:"state"`
	Reason          string `json:"reason,omitempty"`
	Emitted         int64  `json:"emitted"`
	Acked           int64  `json:"acked"`
	Failed          int64  `json:"failed"`
	Pending         int64  `json:"pending"`
	RSSBytes        int64  `json:"rss_bytes"`
	HeartbeatUnixMs int64  `json:"heartbeat_unix_ms"`
	Fingerprint     string `json:"assignment_fingerprint,omitempty"`
}

func statusJSON(r *nimbuspb.ReportRequest) supervisorStatus {
	out := supervisorStatus{Supervisor: r.GetSupervisor(), Workers: []workerStatus{}}
	for _, w := range r.GetWorkers() {
		out.Workers = append(out.Workers, workerStatus{Topology: w.GetTopology(), Port: w.GetPort(), PID: w.GetPid(),
			State: w.GetState(), Reason: w.GetReason(), Emitted: w.GetEmitted(), Acked: w.GetAcked(), Failed: w.GetFailed(),
			Pending: w.GetPending(), RSSBytes: w.GetRssBytes(), HeartbeatUnixMs: w.GetHeartbeatUnixMs(),
			Fingerprint: w.GetAssignmentFingerprint()})
	}
	return out
}

// newSupervisorStatusCmd is `supervisor status`: the workers of the
// supervisor running in a directory, asked of the supervisor itself.
func newSupervisorStatusCmd() *cobra.Command {
	var dir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status --dir DIR [--json]",
		Short: "Show the workers of the supervisor running with --dir DIR, from the supervisor itself",
		Long: `Show what the supervisor running with --dir DIR runs: each worker's slot,
topology, pid, state and counts (emitted, acked, failed), as it reports them
to the nimbus leader every supervisor.heartbeat.frequency.secs. It asks the
supervisor over a unix socket in DIR, so it answers on the machine even when
etcd or nimbus cannot be reached. --json prints the report as one JSON
document.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return cli.Usage(errors.New("--dir is required: the supervisor's state directory"))
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			r, err := supervisor.ReadStatus(ctx, dir)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				return cli.WriteJSON(w, statusJSON(r))
			}
			fmt.Fprintf(w, "supervisor %s: %d workers\n", r.GetSupervisor(), len(r.GetWorkers()))
			if len(r.GetWorkers()) == 0 {
				return nil
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PORT\tTOPOLOGY\tPID\tSTATE\tEMITTED\tACKED\tFAILED\tREASON")
			for _, wr := range r.GetWorkers() {
				fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%d\t%d\t%d\t%s\n", wr.GetPort(), wr.GetTopology(), wr.GetPid(), wr.GetState(),
					wr.GetEmitted(), wr.GetAcked(), wr.GetFailed(), wr.GetReason())
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the supervisor's state `directory`")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document")
	return cmd
}
