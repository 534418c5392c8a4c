package stock

import (
	"errors"
	"fmt"
	"github.com/gale-stream/gale/internal/config"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/cli"
	"github.com/gale-stream/gale/internal/devcluster"
	"github.com/gale-stream/gale/internal/metrics"
	"github.com/gale-stream/gale/internal/metrics/components"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// demoTopology is the topology demo submits: the stock word count, whose
// spout emits every sentence with a message id (ack mode).
const demoTopology = "wordcount"

func newDemoCmd(opts *cli.Options) *cobra.Command {
	var f devFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a dev cluster with the word count submitted, and its live numbers, until Ctrl-C",
		Long: `Run a cluster on this machine as "dev" does, submit the word count to it
(sentences → split → count, every sentence tracked to its end), and print
each second the sentences emitted per second, the trees acked and failed
so far, the p99 of the complete latency (emit to ack) of the trees acked
in the last second, and the workers running of those asked for, from the
supervisors' reports to nimbus. Ctrl-C stops everything.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return cli.Usage(err)
			}
			if _, ok := opts.Lookup(demoTopology); !ok {
				return fmt.Errorf("demo runs the %s topology: %s", demoTopology, opts.Known())
			}
			hurry, stopSignals := hurrySignal()
			defer stopSignals()
			ctx := cmd.Context()
			// Live numbers each second need the supervisors' reports each
			// second (an RPC to nimbus; nothing reaches etcd).
			f.defaults = gale.Config{config.SupervisorHeartbeatFrequencySecs: 1}
			d, err := startDev(ctx, opts, f, cmd.ErrOrStderr(), hurry)
			if err != nil {
				return err
			}
			err = d.Print(cmd.OutOrStdout(), false, false)
			if err == nil {
				err = demo(cmd, opts, d)
			}
			if ctx.Err() != nil {
				fmt.Fprintf(d.Log, "%s demo: stopping the cluster (Ctrl-C again kills it at once)\n", d.Name)
			}
			return errors.Join(err, d.Stop())
		},
	}
	f.bind(cmd, false)
	return cmd
}

// demo submits the word count to d and prints its numbers each second
// until Ctrl-C or a child of d exits.
func demo(cmd *cobra.Command, opts *cli.Options, d *devcluster.Cluster) error {
	ctx := cmd.Context()
	sf := cli.SubmitFlags{ClusterFlags: cli.ClusterFlags{Nimbus: d.NimbusAddr}}
	s, err := sf.Parse(cmd, opts, []string{demoTopology})
	if err != nil {
		return err
	}
	if err := s.Send(cmd, sf); err != nil {
		return err
	}
	c, err := cli.DialNimbus(ctx, s.Cluster)
	if err != nil {
		return err
	}
	defer c.Close()
	out := cmd.OutOrStdout()
	start := time.Now()
	tk := time.NewTicker(time.Second)
	defer tk.Stop()
	var rate demoRate
	var lat demoLatency
	for {
		select {
		case <-ctx.Done():
			return nil
		case ch := <-d.Exited():
			return fmt.Errorf("%s (pid %d) exited: %v; the rest of the cluster is stopped", ch.Role, ch.PID(), devcluster.ExitReason(ch.Err()))
		case now := <-tk.C:
			var resp *nimbuspb.ListResponse
			err := c.Call(ctx, func(n nimbuspb.NimbusClient) (err error) {
				resp, err = n.List(ctx, &nimbuspb.ListRequest{})
				return err
			})
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				fmt.Fprintf(d.Log, "%s demo: list: %v\n", d.Name, err)
				continue
			}
			var cur *nimbuspb.TopologySummary
			for _, t := range resp.GetTopologies() {
				if t.GetName() == demoTopology {
					cur = t
				}
			}
			writeDemoLine(out, now.Sub(start), rate.update(now, cur), lat.update(cur), cur)
		}
	}
}

// demoRate is the spout's rate, from the counters nimbus lists: they
// move when a supervisor's report arrives (each
// supervisor.heartbeat.frequency.secs), so the rate is taken between two
// changes, and kept in between.
type demoRate struct {
	seen    bool
	emitted int64
	at      time.Time // when emitted was first seen
	rate    float64
}

// update takes the summary at now (nil: not listed) and returns the rate.
func (r *demoRate) update(now time.Time, s *nimbuspb.TopologySummary) float64 {
	if s == nil {
		*r = demoRate{}
		return 0
	}
	e := s.GetEmitted()
	switch {
	case !r.seen || e < r.emitted:
		// The first sample, or counters reset by a worker's restart.
		*r = demoRate{seen: true, emitted: e, at: now}
	case e == 0:
		// Nothing flows yet: the rate counts from when it starts.
		r.at = now
	case e > r.emitted:
		r.rate = metrics.Rate(e, r.emitted, now.Sub(r.at).Seconds())
		r.emitted, r.at = e, now
	}
	return r.rate
}

// demoLatency is the p99 complete latency of the trees acked between two
// changes of the histogram nimbus lists (the sum of the workers' latest
// reports, which come each supervisor.heartbeat.frequency.secs: 1 s in the
// demo), kept in between.
type demoLatency struct {
	prev metrics.Latency
	p99  time.Duration
}

// update takes the summary (nil: not listed) and returns the p99, 0 while
// there is none.
func (d *demoLatency) update(s *nimbuspb.TopologySummary) time.Duration {
	cur, err := components.LatencyOf(s.GetCompleteLatency())
	if err != nil {
		return d.p99 // nimbus checks the reports: not expected
	}
	n, was := cur.Count(), d.prev.Count()
	switch {
	case n < was:
		// A worker started again, its counts from zero: the next
		// change is measured from here.
		d.p99 = 0
	case n > was:
		win := cur.Since(&d.prev)
		d.p99 = win.Quantile(0.99)
	}
	d.prev = cur
	return d.p99
}

func writeDemoLine(w io.Writer, elapsed time.Duration, rate float64, p99 time.Duration, s *nimbuspb.TopologySummary) {
	if s == nil {
		fmt.Fprintf(w, "%5.0fs  %s is not listed by nimbus\n", elapsed.Seconds(), demoTopology)
		return
	}
	status := s.GetStatus()
	if s.GetPendingReason() != "" {
		status += " (pending: " + s.GetPendingReason() + ")"
	}
	fmt.Fprintf(w, "%5.0fs  sentences/s %8.0f  acked %10d  failed %6d  p99 %8s  workers %d/%d  %s\n",
		elapsed.Seconds(), rate, s.GetAcked(), s.GetFailed(), latencyText(p99), s.GetWorkersRunning(), s.GetWorkers(), status)
}

// latencyText is d in milliseconds, to two or three digits: 0.42ms,
// 3.1ms, 250ms, 1250ms; "-" for none.
func latencyText(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case d <= 0:
		return "-"
	case ms < 1:
		return fmt.Sprintf("%.2fms", ms)
	case ms < 10:
		return fmt.Sprintf("%.1fms", ms)
	}
	return fmt.Sprintf("%.0fms", ms)
}
