package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gale-stream/gale/internal/nimbuspb"
)

// listedTopology is one row of `list`; --json prints them as is.
type listedTopology struct {
	Name          string `json:"name"`
	ID            string `json:"id"`
	Status        string `json:"status"`
	PendingReason string `json:"pending_reason,omitempty"`
	// Workers is topology.workers, WorkersRunning those the supervisors
	// report running (valid).
	Workers        int32 `json:"workers"`
	WorkersRunning int32 `json:"workers_running"`
	Executors      int32 `json:"executors"`
	Tasks          int32 `json:"tasks"`
	UptimeSecs     int64 `json:"uptime_secs"`
	Emitted        int64 `json:"emitted"`
	Acked          int64 `json:"acked"`
	Failed         int64 `json:"failed"`
}

// ListReport is what `list --json` prints: the topologies and the
// nimbus that answered.
type ListReport struct {
	Nimbus     string           `json:"nimbus"`
	Topologies []listedTopology `json:"topologies"`
}

func listed(s *nimbuspb.TopologySummary) listedTopology {
	return listedTopology{
		Name: s.GetName(), ID: s.GetId(), Status: s.GetStatus(), PendingReason: s.GetPendingReason(),
		Workers: s.GetWorkers(), WorkersRunning: s.GetWorkersRunning(), Executors: s.GetExecutors(), Tasks: s.GetTasks(), UptimeSecs: s.GetUptimeSecs(),
		Emitted: s.GetEmitted(), Acked: s.GetAcked(), Failed: s.GetFailed(),
	}
}

// NewListCmd is `list`, Storm's `storm list`.
func NewListCmd() *cobra.Command {
	var f ClusterFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the cluster's topologies: status, workers, executors, tasks, uptime, acked and failed",
		Long: `List the topologies the cluster runs, as nimbus knows them: name, id, status
(and why a topology waits for slots, if it does), workers (running of those
asked for: 2/4 is a topology short of 2), executors, tasks, uptime, and the
trees acked and failed since it was submitted, every worker it ran counted
(restarted, moved, or on a machine since lost), from the supervisors' reports.
Any nimbus answers: the leader, or another when the leader cannot (JSON's
"nimbus" names the one that did); only the leader knows why a topology is
pending.`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, err := f.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			var resp *nimbuspb.ListResponse
			if err := c.Read(ctx, func(ctx context.Context, n nimbuspb.NimbusClient) (err error) {
				resp, err = n.List(ctx, &nimbuspb.ListRequest{})
				return err
			}); err != nil {
				return fmt.Errorf("list: %w", err)
			}
			r := ListReport{Nimbus: c.answeredBy(), Topologies: []listedTopology{}}
			for _, s := range resp.GetTopologies() {
				r.Topologies = append(r.Topologies, listed(s))
			}
			if asJSON {
				return WriteJSON(cmd.OutOrStdout(), r)
			}
			return writeList(cmd.OutOrStdout(), r)
		},
	}
	f.Bind(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document")
	return cmd
}

func writeList(w io.Writer, r ListReport) error {
	if len(r.Topologies) == 0 {
		_, err := fmt.Fprintln(w, "no topologies running")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tID\tSTATUS\tWORKERS\tEXECUTORS\tTASKS\tUPTIME\tACKED\tFAILED")
	for _, t := range r.Topologies {
		st := t.Status
		if t.PendingReason != "" {
			st += " (pending)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%d\t%d\t%s\t%d\t%d\n", t.Name, t.ID, st, t.WorkersRunning, t.Workers, t.Executors, t.Tasks,
			uptime(t.UptimeSecs), t.Acked, t.Failed)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, t := range r.Topologies {
		if t.PendingReason != "" {
			if _, err := fmt.Fprintf(w, "%s is pending: %s\n", t.Name, t.PendingReason); err != nil {
				return err
			}
		}
	}
	return nil
}

// uptime is secs as Storm's UI shows it: 3d 4h 5m 6s, from the largest
// unit that is not zero.
func uptime(secs int64) string {
	if secs < 60 {
		return strconv.FormatInt(secs, 10) + "s"
	}
	parts := []struct {
		n    int64
		unit string
	}{{secs / 86400, "d"}, {secs / 3600 % 24, "h"}, {secs / 60 % 60, "m"}, {secs % 60, "s"}}
	out := ""
	for _, p := range parts {
		if out == "" && p.n == 0 {
			continue
		}
		if out != "" {
			out += " "
		}
		out += strconv.FormatInt(p.n, 10) + p.unit
	}
	return out
}
