package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gale-stream/gale/internal/doctor"
)

// monitorFrame is one refresh of `monitor --json`.
type monitorFrame struct {
	Nimbus   string `json:"nimbus"`
	Topology string `json:"topology"`
	ID       string `json:"id"`
	Status   string `json:"status"`
	// Workers asked for and running.
	Workers        int32 `json:"workers"`
	WorkersRunning int32 `json:"workers_running"`
	UptimeSecs     int64 `json:"uptime_secs"`
	// Time is when the frame's numbers were reported (the workers'
	// latest heartbeat), RFC 3339.
	Time string `json:"time"`
	// Span is the components' rates: over Seconds between two reports,
	// or over the uptime in the first frame (SinceStart).
	SinceStart bool `json:"since_start"`
	doctor.Span
}

// newMonitorCmd is `monitor NAME`: a live view of a topology's
// components.
func newMonitorCmd() *cobra.Command {
	var f ClusterFlags
	var interval time.Duration
	var count int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "monitor NAME",
		Short: "Watch a running topology live: per component throughput, latency, failures, capacity, backpressure",
		Long: `Watch the topology NAME: every --interval, a table of its components with
their throughput (emitted, acked and executed per second), latency (a
spout's complete latency p50/p99, a bolt's execute latency, and its process
latency where the workers report it), failures per
second (a spout's split into failed by a bolt and timed out), capacity
(the share of time a bolt's busiest executor spent executing: the
runtime's over its last 10 to 20 s, or executed × execute latency over
the frame's span where that is larger), trees in flight against topology.max.spout.pending, and the
share of time held back (a spout at its cap, a bolt on a full queue) where
the workers report it.

Rates are over the time between two reports to nimbus; the first frame
shows averages since the workers started. The numbers move with the
supervisors' reports (supervisor.heartbeat.frequency.secs, 5 s by
default): a shorter --interval repeats a frame's numbers until the next.

On a terminal the table redraws in place; otherwise each refresh is
appended as a block. --count N stops after N refreshes (0: until Ctrl-C).
--json prints each refresh as one JSON document.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var errs []error
			if len(args) != 1 {
				errs = append(errs, fmt.Errorf("%q takes the name of one topology (gale list shows them), got %d arguments", cmd.CommandPath(), len(args)))
			}
			if interval <= 0 {
				errs = append(errs, fmt.Errorf("--interval must be > 0, got %s", interval))
			}
			if count < 0 {
				errs = append(errs, fmt.Errorf("--count must be ≥ 0 refreshes, got %d", count))
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
			out := cmd.OutOrStdout()
			redraw := !asJSON && isTerminal(out)
			tk := time.NewTicker(interval)
			defer tk.Stop()
			var prev *doctor.Sample
			var span doctor.Span
			for n := 1; ; n++ {
				s, err := takeSample(ctx, c, name)
				if err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return err
				}
				// Rates between two reports that differ; a sample between
				// the same two reports shows the last rates again.
				switch {
				case prev == nil:
					span = doctor.Rates(nil, s)
					prev = &s
				case s.AsOf().After(prev.AsOf()):
					span = doctor.Rates(prev, s)
					prev = &s
				}
				fr := monitorFrame{Nimbus: c.leader, Topology: s.Info.GetSummary().GetName(), ID: s.Info.GetSummary().GetId(),
					Status: s.Info.GetSummary().GetStatus(), Workers: s.Info.GetSummary().GetWorkers(),
					WorkersRunning: s.Info.GetSummary().GetWorkersRunning(), UptimeSecs: s.Info.GetSummary().GetUptimeSecs(),
					Time: s.AsOf().UTC().Format(time.RFC3339), SinceStart: n == 1, Span: span}
				if asJSON {
					err = WriteJSON(out, fr)
				} else {
					err = writeMonitor(out, fr, redraw, n > 1)
				}
				if err != nil {
					return err
				}
				if count > 0 && n >= count {
					return nil
				}
				select {
				case <-ctx.Done():
					return nil
				case <-tk.C:
				}
			}
		},
	}
	f.Bind(cmd)
	fl := cmd.Flags()
	fl.DurationVar(&interval, "interval", 2*time.Second, "time between refreshes")
	fl.IntVar(&count, "count", 0, "stop after N refreshes (0: until Ctrl-C)")
	fl.BoolVar(&asJSON, "json", false, "print each refresh as one JSON document")
	return cmd
}

// isTerminal says whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// writeMonitor prints a frame: on a terminal over the last one (cursor
// home, clear the screen), otherwise after it, a blank line between.
func writeMonitor(w io.Writer, fr monitorFrame, redraw, more bool) error {
	var b strings.Builder
	switch {
	case redraw:
		b.WriteString("\x1b[H\x1b[2J")
	case more:
		b.WriteString("\n")
	}
	over := fmt.Sprintf("rates over %.1f s", fr.Seconds)
	if fr.SinceStart {
		over = "averages since the workers started"
	}
	fmt.Fprintf(&b, "%s (%s)  %s  workers %d/%d  up %s  at %s  (%s)\n", fr.Topology, fr.ID, fr.Status,
		fr.WorkersRunning, fr.Workers, uptime(fr.UptimeSecs), fr.Time, over)
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tKIND\tEXECUTORS\tEMITTED/s\tACKED/s\tEXECUTED/s\tFAILED/s\tLATENCY\tCAPACITY\tIN FLIGHT\tHELD")
	// Spouts first, then bolts, each in id order (nimbus's).
	comps := slices.Clone(fr.Components)
	slices.SortStableFunc(comps, func(a, b doctor.Component) int {
		return strings.Compare(b.Kind, a.Kind) // "spout" before "bolt"
	})
	for _, c := range comps {
		execs := fmt.Sprint(c.Executors)
		if c.Tasks != c.Executors {
			execs = fmt.Sprintf("%d (%d tasks)", c.Executors, c.Tasks)
		}
		failed := rate(c.Failed)
		lat, capacity, executed, inFlight := "-", "-", "-", "-"
		held := c.BackpressureShare
		if c.Kind == "spout" {
			failed = fmt.Sprintf("%s (bolt %s, timeout %s)", rate(c.Failed), rate(c.FailedByBolt), rate(c.TimedOut))
			if c.CompleteCount > 0 {
				lat = fmt.Sprintf("complete %s/%s", doctor.Duration(c.CompleteP50), doctor.Duration(c.CompleteP99))
			}
			inFlight = fmt.Sprint(c.Pending)
			if c.MaxPending > 0 {
				inFlight += fmt.Sprintf(" of %d", c.MaxPending)
			}
			held = max(held, c.ThrottledShare)
		} else {
			executed = rate(c.Executed)
			if c.ExecuteLatency > 0 {
				lat = "execute " + doctor.Duration(c.ExecuteLatency)
			}
			if c.ProcessLatency > 0 {
				lat += ", process " + doctor.Duration(c.ProcessLatency)
			}
			capacity = fmt.Sprintf("%.2f", c.Load())
			if c.QueueCapacity > 0 {
				inFlight = fmt.Sprintf("queue %d of %d", c.QueueDepth, c.QueueCapacity)
			}
		}
		heldS := "-"
		if held > 0 {
			heldS = fmt.Sprintf("%.0f%%", 100*min(held, 1))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Component, c.Kind, execs, rate(c.Emitted), rate(c.Acked),
			executed, failed, lat, capacity, inFlight, heldS)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(fr.Components) == 0 {
		b.WriteString("no numbers yet: the workers have not reported\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// rate prints a per-second rate.
func rate(r float64) string {
	switch {
	case r == 0:
		return "0"
	case r < 10:
		return fmt.Sprintf("%.2f", r)
	default:
		return fmt.Sprintf("%.0f", r)
	}
}
