package cli

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/gale-stream/gale/internal/nimbuspb"
)

// demoTopology is the topology demo submits: the stock word count, whose
// spout emits every sentence with a message id (ack mode).
const demoTopology = "wordcount"

func newDemoCmd(opts *Options) *cobra.Command {
	var f devFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a dev cluster with the word count submitted, and its live numbers, until Ctrl-C",
		Long: `Run a cluster on this machine as "dev" does, submit the word count to it
(sentences → split → count, every sentence tracked to its end), and print
each second the sentences emitted per second and the trees acked and failed
so far, from the supervisors' reports to nimbus. Ctrl-C stops everything.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return usageError{err}
			}
			if _, ok := opts.lookup(demoTopology); !ok {
				return fmt.Errorf("demo runs the %s topology: %s", demoTopology, opts.known())
			}
			hurry, stopSignals := hurrySignal()
			defer stopSignals()
			ctx := cmd.Context()
			d, err := startDev(ctx, opts, f, cmd.ErrOrStderr(), hurry)
			if err != nil {
				return err
			}
			err = d.print(cmd.OutOrStdout(), false)
			if err == nil {
				err = demo(cmd, opts, d)
			}
			if ctx.Err() != nil {
				fmt.Fprintf(d.log, "%s demo: stopping the cluster (Ctrl-C again kills it at once)\n", d.name)
			}
			return errors.Join(err, d.stop())
		},
	}
	f.bind(cmd, false)
	return cmd
}

// demo submits the word count to d and prints its numbers each second
// until Ctrl-C or a child of d exits.
func demo(cmd *cobra.Command, opts *Options, d *devCluster) error {
	ctx := cmd.Context()
	sf := submitFlags{clusterFlags: clusterFlags{nimbus: d.nimbusAddr}}
	s, err := sf.parse(cmd, opts, []string{demoTopology})
	if err != nil {
		return err
	}
	if err := s.send(cmd, sf); err != nil {
		return err
	}
	c, err := dialNimbus(ctx, s.cluster)
	if err != nil {
		return err
	}
	defer c.Close()
	out := cmd.OutOrStdout()
	start := time.Now()
	tk := time.NewTicker(time.Second)
	defer tk.Stop()
	var last demoSample
	for {
		select {
		case <-ctx.Done():
			return nil
		case ch := <-d.exited:
			return fmt.Errorf("%s (pid %d) exited: %v; the rest of the cluster is stopped", ch.role, ch.pid(), exitReason(ch.err))
		case now := <-tk.C:
			var resp *nimbuspb.ListResponse
			err := c.call(ctx, func(n nimbuspb.NimbusClient) (err error) {
				resp, err = n.List(ctx, &nimbuspb.ListRequest{})
				return err
			})
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				fmt.Fprintf(d.log, "%s demo: list: %v\n", d.name, err)
				continue
			}
			cur := demoSample{at: now}
			for _, t := range resp.GetTopologies() {
				if t.GetName() == demoTopology {
					cur.found, cur.summary = true, t
				}
			}
			writeDemoLine(out, now.Sub(start), last, cur)
			last = cur
		}
	}
}

// demoSample is the word count's summary at one tick.
type demoSample struct {
	at      time.Time
	found   bool
	summary *nimbuspb.TopologySummary
}

func writeDemoLine(w io.Writer, elapsed time.Duration, last, cur demoSample) {
	if !cur.found {
		fmt.Fprintf(w, "%5.0fs  %s is not listed by nimbus\n", elapsed.Seconds(), demoTopology)
		return
	}
	s := cur.summary
	rate := 0.0
	if last.found {
		// Counters restart with a worker: a drop is no negative rate.
		if d := s.GetEmitted() - last.summary.GetEmitted(); d > 0 {
			rate = float64(d) / cur.at.Sub(last.at).Seconds()
		}
	}
	status := s.GetStatus()
	if s.GetPendingReason() != "" {
		status += " (pending: " + s.GetPendingReason() + ")"
	}
	fmt.Fprintf(w, "%5.0fs  sentences/s %8.0f  acked %10d  failed %6d  workers %d  %s\n",
		elapsed.Seconds(), rate, s.GetAcked(), s.GetFailed(), s.GetWorkers(), status)
}
