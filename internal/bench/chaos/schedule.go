// Package chaos is the pure part of `gale bench chaos`: the
// schedule of faults drawn from a seed (Schedule), the checks over what
// the bench saw while they happened (Evaluate: counters that never go back,
// the longest time without an answer, final counts against the source's),
// and the report (Report, Print).
//
// The bench itself (internal/stock/bench_chaos.go) runs the cluster, does
// the events at their times, polls the sources once a second and hands
// the observations, the events it did and the queue's counts to Evaluate.
// Nothing here reads a clock: times are seconds since the run began, as
// the caller measured them, so the checks are tested with made-up series.
package chaos

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Kind is what an event kills with SIGKILL.
type Kind string

const (
	// KillWorker kills one worker process; its supervisor restarts it.
	KillWorker Kind = "worker"
	// KillSupervisor kills one supervisor process and leaves its workers
	// running, as kill -9 does; the bench starts it again after Down.
	KillSupervisor Kind = "supervisor"
	// KillLeader kills the nimbus that leads; the bench starts it again
	// after Down.
	KillLeader Kind = "leader"
)

// Kinds are the events' kinds, in the order Schedule draws them from.
var Kinds = []Kind{KillWorker, KillSupervisor, KillLeader}

// Event is one planned fault.
type Event struct {
	// At is when it happens, since the chaos began (after the warm-up).
	At   time.Duration
	Kind Kind
	// Pick chooses the target among those there are when it happens
	// (Target): the processes differ from run to run, the choice does not.
	Pick uint64
	// Down is how long a killed supervisor or leader stays down before it
	// is started again; 0 for a worker (its supervisor restarts it).
	Down time.Duration
}

// Target is the index of the event's target among n candidates, listed
// in an order that does not depend on the run (supervisors by name,
// workers by supervisor and port). n must be > 0.
func (e Event) Target(n int) int { return int(e.Pick % uint64(n)) }

// ScheduleConfig shapes a schedule.
type ScheduleConfig struct {
	// Duration is the chaos's length: events happen at Period, 2×Period,
	// ... while before Duration.
	Duration time.Duration
	Period   time.Duration
	// DownMin and DownMax bound a supervisor's or leader's downtime, drawn
	// uniformly in whole 100 ms steps.
	DownMin, DownMax time.Duration
}

// Validate says what is wrong with c, naming the flag-like field.
func (c ScheduleConfig) Validate() error {
	switch {
	case c.Period <= 0:
		return fmt.Errorf("the period between events must be > 0, got %s", c.Period)
	case c.Duration < c.Period:
		return fmt.Errorf("the duration %s is shorter than the period %s between events: no event would happen", c.Duration, c.Period)
	case c.DownMin < 0 || c.DownMax < c.DownMin:
		return fmt.Errorf("the downtime must be 0 ≤ min ≤ max, got %s to %s", c.DownMin, c.DownMax)
	}
	return nil
}

// Schedule draws the events of a run from seed: the same seed and config
// give the same events, on every machine and Go release (PCG is
// specified). c must be valid.
func Schedule(seed uint64, c ScheduleConfig) []Event {
	r := rand.New(rand.NewPCG(seed, 0x6761_6c65_6368_616f)) // "galechao"
	const step = 100 * time.Millisecond
	steps := int64((c.DownMax - c.DownMin) / step)
	var evs []Event
	for at := c.Period; at < c.Duration; at += c.Period {
		e := Event{At: at, Kind: Kinds[r.IntN(len(Kinds))], Pick: r.Uint64()}
		down := c.DownMin + time.Duration(r.Int64N(steps+1))*step // drawn for every kind: one kind's change moves no other
		if e.Kind != KillWorker {
			e.Down = down
		}
		evs = append(evs, e)
	}
	return evs
}
