package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/connectors/kafka"
	"github.com/gale-stream/gale/internal/workerproc"
)

// ModeKill is the duplicates measurement: the crash tests' topology
// (Build) in KillWorkers worker processes, one of them killed with
// SIGKILL mid-stream and started again, as a supervisor would.
const ModeKill = "kill"

// OutputTopic is where the kill mode's topology writes what it
// processed, and PacedTopic what it reads when Config.Rate is set; the
// broker makes them with the input topic.
const (
	OutputTopic = "events-out"
	PacedTopic  = "events-paced"
)

// The kill mode's shape: what bounds its duplicates.
const (
	KillWorkers         = 2
	KillSpoutTasks      = 2
	KillMaxSpoutPending = 500
	// KillAt is the share of the ids in the output when worker 0 is
	// killed (once the consumer group has settled: groupSettled).
	KillAt = 0.3
	// killTimeout is topology.message.timeout.secs: how long the trees
	// through the dead worker take to fail back to their spouts.
	killTimeout = 5
	// killSession is the group's session timeout, in ms: how soon the
	// dead worker's partitions go to a live member.
	killSession = 6000
)

// KillResult is the kill mode's measurement of duplicates against their
// bound.
type KillResult struct {
	// PerSec is the output's rate before the kill (ids a second).
	PerSec float64 `json:"messages_per_sec_before_kill"`
	// InFlight is the trees the spouts may hold (spout tasks × max spout
	// pending), CommitPeriodRecords the records the output gained in an
	// offset.commit.period before the kill; Bound their sum: what a kill
	// may make the topology process again.
	InFlight            int64 `json:"in_flight"`
	CommitPeriodRecords int64 `json:"commit_period_records"`
	Bound               int64 `json:"bound"`
	// RecoverSeconds is the time from the kill until every id was in the
	// output; Restarts the workers started again.
	RecoverSeconds float64 `json:"recover_seconds"`
	Restarts       int     `json:"restarts"`
}

// killParams are the worker processes' topology parameters (Build).
func killParams(brokers []string, topic, group string) map[string]string {
	return map[string]string{"brokers": brokers[0], "topic": topic, "group": group, "output": OutputTopic,
		"spouts": strconv.Itoa(KillSpoutTasks), "decoders": "2", "sinks": "2",
		"session.timeout.ms": strconv.Itoa(killSession)}
}

// KillFactory is the name the kill mode's worker processes know
// WorkerFactory by (workerproc.Register, in the gale binary).
const KillFactory = "bench:kafka-kill"

// WorkerFactory builds the crash tests' topology (Build) in a worker
// process of the kill mode; the gale binary registers it as KillFactory.
func WorkerFactory(raw json.RawMessage) (*workerproc.Built, error) {
	var params map[string]string
	if err := json.Unmarshal(raw, &params); err != nil {
		return nil, fmt.Errorf("bench-kafka parameters: %w", err)
	}
	topo, conf, err := Build(params)
	if err != nil {
		return nil, err
	}
	return &workerproc.Built{Topology: topo, Config: conf}, nil
}

// runKill runs the kill mode in group group: it reads the output topic
// from the start, launches the workers, kills worker 0 once KillAt of the
// ids are in the output and the spouts' group has settled, and waits
// until every id is.
func runKill(ctx context.Context, cfg Config, b *Broker, group string) (Result, *KillResult, error) {
	res := Result{Mode: ModeKill, Messages: cfg.Messages, Lost: int64(cfg.Messages)}
	kr := &KillResult{InFlight: KillSpoutTasks * KillMaxSpoutPending}
	brokers := []string{b.Addr}
	out, err := ReadOutput(brokers, OutputTopic, cfg.Messages)
	if err != nil {
		return res, kr, err
	}
	defer out.Close()
	topic := Topic
	if cfg.Rate > 0 {
		// Produced while the topology reads, at cfg.Rate, by a goroutine
		// this function waits for.
		topic = PacedTopic
		pctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := Produce(pctx, brokers, PacedTopic, 0, int64(cfg.Messages), cfg.Rate); err != nil && pctx.Err() == nil {
				cfg.Log.Error("bench kafka: producing the paced topic failed", "err", err)
			}
		}()
		defer func() { cancel(); wg.Wait() }()
	}
	adm, err := newAdmin(brokers)
	if err != nil {
		return res, kr, err
	}
	defer adm.Close()
	params, err := json.Marshal(killParams(brokers, topic, group))
	if err != nil {
		return res, kr, err
	}
	stderr := cfg.WorkerLogs
	if stderr == nil {
		stderr = io.Discard
	}
	c, err := workerproc.Launch(workerproc.LaunchConfig{
		Exe:  cfg.Exe,
		Args: cfg.WorkerArgs,
		Spec: workerproc.Spec{
			Topology: TopologyName, Factory: KillFactory, Params: params,
			Config: gale.Config{gale.TopologyMessageTimeoutSecs: killTimeout, gale.TopologyAckerExecutors: KillWorkers,
				gale.TopologyMaxSpoutPending: KillMaxSpoutPending},
			HeartbeatMS: 100,
			LogLevel:    "warn",
		},
		N:       KillWorkers,
		Stderr:  stderr,
		Restart: true,
	})
	if err != nil {
		return res, kr, err
	}
	start := time.Now()
	runErr := func() error {
		tk := time.NewTicker(watchPoll)
		defer tk.Stop()
		at := int64(float64(cfg.Messages) * KillAt)
		period := kafka.DefaultOffsetCommitPeriod
		// The output's rate over the last offset.commit.period before
		// the kill, from samples a watchPoll apart.
		type sample struct {
			at time.Time
			n  int64
		}
		var window []sample
		killed := time.Time{}
		// The kill waits for the group to settle, as well as for KillAt
		// of the ids: see groupSettled.
		var (
			lastLook time.Time
			settled  bool
			why      string
		)
		last, lastAt := out.Tally.Seen(), time.Now()
		for !out.Tally.Complete() {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-b.Exited():
				return fmt.Errorf("the broker exited: %v; its last lines: %s", b.err, b.tail())
			case now := <-tk.C:
				n := out.Tally.Distinct()
				if killed.IsZero() {
					window = append(window, sample{now, n})
					for len(window) > 1 && now.Sub(window[1].at) >= period {
						window = window[1:]
					}
					if n >= at && time.Since(lastLook) >= settlePoll {
						lastLook = time.Now()
						settled, why = groupSettled(ctx, adm, group)
					}
					if n >= at && settled {
						w0 := window[0]
						if d := now.Sub(w0.at); d > 0 {
							kr.PerSec = float64(n-w0.n) / d.Seconds()
						}
						kr.CommitPeriodRecords = int64(kr.PerSec * period.Seconds())
						if err := c.Kill(0); err != nil {
							return fmt.Errorf("kill worker 0: %w", err)
						}
						killed = now
						fmt.Fprintf(cfg.Live, "bench kafka: kill  worker 0 killed with %d of %d ids in the output (%.0f/s)\n", n, cfg.Messages, kr.PerSec)
					}
				}
				if s := out.Tally.Seen(); s != last {
					last, lastAt = s, now
				} else if now.Sub(lastAt) > cfg.Stall {
					return fmt.Errorf("no new record in the output for %s, %d of %d ids seen", cfg.Stall, out.Tally.Distinct(), cfg.Messages)
				}
			}
		}
		if killed.IsZero() {
			return fmt.Errorf("every id was in the output before worker 0 could be killed: the consumer group had not settled (%s); try more --messages or a --rate", why)
		}
		kr.RecoverSeconds = time.Since(killed).Seconds()
		return nil
	}()
	end := time.Now()
	stopErr := c.Stop(2*killTimeout*time.Second + 30*time.Second)
	kr.Restarts = c.Restarts()
	kr.Bound = kr.InFlight + kr.CommitPeriodRecords
	res.Seconds = end.Sub(start).Seconds()
	res.TotalSeconds = res.Seconds
	res.Measured = out.Tally.Distinct()
	if res.Seconds > 0 {
		res.PerSec = float64(res.Measured) / res.Seconds
	}
	res.Lost, res.Duplicates = out.Tally.Lost(), out.Tally.Duplicates()
	// A worker that failed to start again, or to stop, often explains a
	// stalled run: report both.
	runErr = errors.Join(runErr, stopErr)
	if runErr == nil && res.Lost > 0 {
		runErr = fmt.Errorf("%d of %d ids never reached the output (the first: %v)", res.Lost, cfg.Messages, out.Tally.Missing(5))
	}
	return res, kr, runErr
}

// settlePoll is how often the kill mode asks the broker whether the
// group has settled.
const settlePoll = 50 * time.Millisecond

func newAdmin(brokers []string) (*kadm.Client, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return nil, fmt.Errorf("benchkafka: admin client: %w", err)
	}
	return kadm.NewClient(cl), nil
}

// groupSettled reports whether the spouts' consumer group is stable with
// a member for every spout task, each holding partitions, and if not,
// what it saw instead. The kill mode kills worker 0 only then: the
// duplicates it measures are those of a kill mid-stream, and a member
// killed in the middle of a rebalance is a different experiment, and one
// kfake (the bench's broker) does not survive: it went on to complete a
// rebalance without the surviving member and never answered that
// member's JoinGroup, on which franz-go then held its commits and its
// leave, so that its partitions' last records never reached the output
// (the run stalled) or the worker did not stop.
func groupSettled(ctx context.Context, adm *kadm.Client, group string) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	gs, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return false, fmt.Sprintf("describe group %s: %v", group, err)
	}
	g, ok := gs[group]
	switch {
	case !ok:
		return false, fmt.Sprintf("group %s not described", group)
	case g.Err != nil:
		return false, fmt.Sprintf("group %s: %v", group, g.Err)
	case g.State != "Stable":
		return false, fmt.Sprintf("group %s is %s", group, g.State)
	case len(g.Members) != KillSpoutTasks:
		return false, fmt.Sprintf("group %s has %d members, want %d", group, len(g.Members), KillSpoutTasks)
	}
	for _, m := range g.Members {
		a, ok := m.Assigned.AsConsumer()
		n := 0
		if ok {
			for _, t := range a.Topics {
				n += len(t.Partitions)
			}
		}
		if n == 0 {
			return false, fmt.Sprintf("member %s of group %s holds no partition yet", m.MemberID, group)
		}
	}
	return true, ""
}
