package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gale-stream/gale/internal/doctor"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// doctorReport is what `doctor --json` prints.
type doctorReport struct {
	Nimbus       string  `json:"nimbus"`
	DurationSecs float64 `json:"duration_secs"`
	IntervalSecs float64 `json:"interval_secs"`
	doctor.Report
	// Problems counts the findings of severity warning or critical; 0
	// is "no problem found".
	Problems int `json:"problems"`
}

// newDoctorCmd is `doctor NAME`: the troubleshooting order applied to a
// topology's live numbers.
func newDoctorCmd() *cobra.Command {
	var f ClusterFlags
	var duration, interval time.Duration
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor NAME",
		Short: "Diagnose a running topology: shape, throttled spouts, saturated bolts, timeouts, restarts, failures",
		Long: `Diagnose the topology NAME from its live numbers: it asks nimbus for them
every --interval for --duration, reads rates from the differences, and
applies the Storm@Twitter troubleshooting order, from symptom to cause:

  1. shape: the workers asked for against those running and the slots free
     to it (a topology short of workers is queueing, not slow: doctor stops
     there); workers under GC pressure (their heap at worker.heap.memory.mb);
     a bolt that executes its input but never acks it;
  2. a spout throttled by topology.max.spout.pending (trees in flight pinned
     at the cap while the bolts idle), or a bolt saturated (capacity near 1),
     on all its executors or on one only (skew: a hot key);
  3. trees timing out: processing longer than topology.message.timeout.secs,
     trees queueing close to it, or trees lost (while they time out, doctor
     does not judge saturation: replays load the bolts);
  4. workers starting again, and trees failed by bolts, with the last error.

Each finding prints its severity, its cause, the numbers behind it and what
to change: the config key (with the command that resubmits the topology
with it) or the rebalance command. With none, it prints "no problem found"
and the key numbers.

The default --duration, 15s, covers the window of a bolt's capacity (the
share of the last 10 to 20 s it spent executing) and three of the
supervisors' reports to nimbus (supervisor.heartbeat.frequency.secs, 5 s by
default); --duration 0 takes one sample and reads averages since the
workers started. Ctrl-C ends the sampling early and diagnoses what it has.

The exit code is 0 when no problem is found (notes of severity info aside),
1 when one is, or when nimbus cannot be asked (then nothing is printed on
stdout). --json prints one JSON document, with "problems" counting them.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var errs []error
			if len(args) != 1 {
				errs = append(errs, fmt.Errorf("%q takes the name of one topology (gale list shows them), got %d arguments", cmd.CommandPath(), len(args)))
			}
			if duration < 0 {
				errs = append(errs, fmt.Errorf("--duration must be ≥ 0, got %s", duration))
			}
			if interval <= 0 {
				errs = append(errs, fmt.Errorf("--interval must be > 0, got %s", interval))
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
			if !asJSON {
				fmt.Fprintf(cmd.ErrOrStderr(), "sampling %s every %s for %s…\n", name, interval, duration)
			}
			samples, err := sampleTopology(ctx, c, name, duration, interval)
			if err != nil {
				return err
			}
			r := doctor.Diagnose(samples)
			out := cmd.OutOrStdout()
			if asJSON {
				err = WriteJSON(out, doctorReport{Nimbus: c.leader, DurationSecs: duration.Seconds(), IntervalSecs: interval.Seconds(),
					Report: r, Problems: r.Problems()})
			} else {
				err = writeDoctor(out, r)
			}
			if err != nil {
				return err
			}
			if n := r.Problems(); n > 0 {
				return fmt.Errorf("doctor %s: %d problem(s) found", name, n)
			}
			return nil
		},
	}
	f.Bind(cmd)
	fl := cmd.Flags()
	fl.DurationVar(&duration, "duration", 15*time.Second, "how long to sample (0: one sample, averages since the workers started)")
	fl.DurationVar(&interval, "interval", 5*time.Second, "time between samples")
	fl.BoolVar(&asJSON, "json", false, "print one JSON document")
	return cmd
}

// sampleTopology takes a sample of the topology now and every interval
// until duration has passed. A first Ctrl-C (ctx done) ends the sampling
// with the samples taken so far.
func sampleTopology(ctx context.Context, c *Client, name string, duration, interval time.Duration) ([]doctor.Sample, error) {
	var samples []doctor.Sample
	start := time.Now()
	tk := time.NewTicker(interval)
	defer tk.Stop()
	for {
		s, err := takeSample(ctx, c, name)
		if err != nil {
			if ctx.Err() != nil && len(samples) > 0 {
				return samples, nil
			}
			return nil, err
		}
		samples = append(samples, s)
		if time.Since(start) >= duration {
			return samples, nil
		}
		select {
		case <-ctx.Done():
			return samples, nil
		case <-tk.C:
		}
	}
}

// takeSample asks nimbus for the topology and the cluster's slots: the
// leader, or another nimbus when the leader cannot answer (a read).
func takeSample(ctx context.Context, c *Client, name string) (doctor.Sample, error) {
	var s doctor.Sample
	err := c.Read(ctx, func(ctx context.Context, n nimbuspb.NimbusClient) (err error) {
		// All-time counters (window 0): their differences are the rates.
		s.Info, err = n.Get(ctx, &nimbuspb.GetRequest{Name: name})
		if err != nil {
			return err
		}
		s.Cluster, err = n.ClusterInfo(ctx, &nimbuspb.ClusterInfoRequest{})
		return err
	})
	if err != nil {
		return s, fmt.Errorf("get %s: %w", name, err)
	}
	s.At = time.Now()
	return s, nil
}

// writeDoctor prints a report: a header, then each finding, or "no
// problem found" with the key numbers.
func writeDoctor(w io.Writer, r doctor.Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "topology %s (%s): %s, %d samples over %.0f s\n", r.Topology, r.ID, r.Status, r.Samples, r.Numbers.Seconds)
	if r.Problems() == 0 {
		fmt.Fprintf(&b, "no problem found: %s\n", keyNumbers(r.Numbers))
	}
	for i, f := range r.Findings {
		fmt.Fprintf(&b, "\n%d. %s: %s", i+1, strings.ToUpper(string(f.Severity)), f.Kind)
		if f.Component != "" {
			fmt.Fprintf(&b, " (%s)", f.Component)
		}
		fmt.Fprintf(&b, "\n   cause: %s\n", f.Cause)
		for _, m := range f.Evidence {
			fmt.Fprintf(&b, "     %s: %s\n", m.Name, m.Value)
		}
		fmt.Fprintf(&b, "   fix:   %s\n", f.Fix)
	}
	if r.Problems() > 0 {
		fmt.Fprintf(&b, "\nkey numbers: %s\n", keyNumbers(r.Numbers))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func keyNumbers(n doctor.Numbers) string {
	parts := []string{
		fmt.Sprintf("workers %d/%d", n.WorkersRunning, n.Workers),
		fmt.Sprintf("emitted %.1f/s", n.EmittedPerSec),
		fmt.Sprintf("acked %.1f/s", n.AckedPerSec),
		fmt.Sprintf("failed %.1f/s (timed out %.1f/s)", n.FailedPerSec, n.TimedOutPerSec),
		fmt.Sprintf("complete latency p50 %s p99 %s", msString(n.CompleteP50Ms), msString(n.CompleteP99Ms)),
	}
	if n.BusiestBolt != "" {
		parts = append(parts, fmt.Sprintf("busiest bolt %s at capacity %.2f", n.BusiestBolt, n.BusiestCapacity))
	}
	if n.MaxPending > 0 {
		parts = append(parts, fmt.Sprintf("trees in flight %d of %d", n.Pending, n.MaxPending))
	} else {
		parts = append(parts, fmt.Sprintf("trees in flight %d (no max spout pending)", n.Pending))
	}
	parts = append(parts, fmt.Sprintf("message timeout %d s", n.MessageTimeoutSecs))
	return strings.Join(parts, ", ")
}

func msString(ms float64) string {
	return doctor.Duration(time.Duration(ms * float64(time.Millisecond)))
}
