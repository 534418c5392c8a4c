package scheduler

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/gale-stream/gale/internal/plan"
)

// Supervisor is a live supervisor as the cluster scheduler sees it: a
// machine whose worker slots are its ports.
type Supervisor struct {
	ID    string `json:"id"`
	Host  string `json:"host"`
	Ports []int  `json:"ports"`
}

// Placement is a worker slot: a port of a supervisor.
type Placement struct {
	Supervisor string `json:"supervisor"`
	Port       int    `json:"port"`
}

// Request asks Schedule to place one topology.
type Request struct {
	// Topology is the topology's id; requests are scheduled in the order
	// given (isolated ones first), and the first of two with the same id
	// is the one scheduled.
	Topology string
	Plan     plan.Plan
	// Workers is topology.workers; WorkerCount caps it.
	Workers int
	// Machines is isolation.scheduler.machines for the topology: how many
	// supervisors it gets to itself. 0 means it shares supervisors.
	Machines int
}

// Current is the assignment in force for a topology: worker index →
// slot, and executor index → worker index.
type Current struct {
	Workers   []Placement `json:"workers"`
	Executors []int       `json:"executors"`
}

// Result is where a topology's workers go, or why they go nowhere.
type Result struct {
	// Workers maps worker index → slot; nil when pending.
	Workers []Placement `json:"workers,omitempty"`
	// Executors maps executor index → worker index (Even's rule); nil
	// when pending.
	Executors []int `json:"executors,omitempty"`
	// Pending, when not empty, says why the topology is not scheduled,
	// with the numbers that decide it.
	Pending string `json:"pending,omitempty"`
}

// WorkerCount is the number of workers Schedule gives a plan when
// topology.workers is workers: workers, but no more than there are
// executors (workers past them would run nothing), and at least 1.
func WorkerCount(p plan.Plan, workers int) int {
	return max(1, min(workers, len(p.Executors)))
}

// Schedule places the requested topologies' workers on the worker slots
// (supervisor, port) of the live supervisors: Storm's even scheduler and
// isolation scheduler, moving as few workers as it can. It is a pure
// function of its arguments: equal arguments give equal results in every
// process. The result has an entry for every requested topology id.
//
// Each topology gets WorkerCount(Plan, Workers) workers, and its
// executors go to them by Even's rule, so the executor → worker map
// depends only on the plan and the worker count.
//
// Minimal movement: a topology whose Current has the same worker count
// and as many executors as its plan (every one on one of those workers)
// keeps each worker whose slot is still live, and not on a supervisor now
// dedicated to an isolated topology, at the same worker index on the same
// slot; only the others move, to free slots. A topology whose Current
// does not match (a rebalance, or a Current naming workers it does not
// have) is scheduled afresh, reusing its own previous slots where the
// spread allows. The live slots of every Current are taken before any
// worker is placed, so a moving worker never displaces another topology's
// running one. A topology absent from reqs frees its slots.
//
// Spread: each new worker of a topology goes to the supervisor with the
// fewest of that topology's workers, then (on a fresh schedule) one where
// it ran before, then the one with the most free slots, then the lowest
// supervisor id, on its lowest free port; so a topology's workers spread
// evenly over the machines, the emptiest first.
//
// Isolation: a Request with Machines = m > 0 gets min(m, its workers)
// supervisors to itself, on which no other topology's worker is kept or
// placed, and its workers go only there. Isolated requests are served
// first, in order. Each keeps the live supervisors it runs on (most of
// its workers first), which no other isolated topology may take; then it
// takes supervisors no one runs on, then those with the fewest shared
// workers to move off, the largest first, so long as its chosen machines
// can still hold all its workers.
//
// Pending: a topology that cannot be placed whole (not enough free slots,
// or not enough free machines for isolation) gets Result.Pending, which
// says why with the numbers, and no new slot: it is never half-run.
// Workers of its Current on live slots are still running, so their slots
// stay reserved for it (no other topology is placed on them) unless
// their supervisor is now dedicated to an isolated topology, and the
// supervisors a pending isolated topology runs on take no new worker of
// any topology (shared workers running there stay). Nimbus keeps a
// pending topology's assignment in force less the workers on supervisors
// now dedicated to others: those slots are another topology's.
//
// Bad input is tolerated, not trusted: of two supervisors with the same
// id the first counts, a repeated port counts once, and ports outside
// 1–65535 and supervisors without an id are ignored (CheckSupervisors
// names them); a slot named twice in one Current is kept for the lower
// worker index only, and a slot in two topologies' Currents for the
// topology served first.
func Schedule(live []Supervisor, reqs []Request, current map[string]Current) map[string]Result {
	c := newCluster(live, reqs, current)
	for ji, j := range c.jobs {
		if j.machines > 0 {
			c.isolate(ji)
		}
	}
	// Every shared topology's running workers first, then the new ones.
	for ji, j := range c.jobs {
		if j.machines == 0 {
			for _, p := range j.cur {
				if m := c.machineOf(p); m != nil && m.state != dedicated {
					c.claim(p, ji)
				}
			}
		}
	}
	var sharedMs []*machine
	for _, m := range c.ms {
		if m.state == shared {
			sharedMs = append(sharedMs, m)
		}
	}
	for ji, j := range c.jobs {
		if j.machines == 0 {
			c.place(ji, sharedMs)
		}
	}
	out := make(map[string]Result, len(c.jobs))
	for _, j := range c.jobs {
		out[j.id] = j.res
	}
	return out
}

// CheckSupervisors reports what Schedule ignores in live: supervisors
// without an id or with the id of an earlier one, and ports repeated or
// outside 1–65535. nil when it ignores nothing.
func CheckSupervisors(live []Supervisor) error {
	seen := make(map[string]int, len(live))
	var errs []string
	for i, s := range live {
		if s.ID == "" {
			errs = append(errs, fmt.Sprintf("supervisor %d (host %q) has no id", i, s.Host))
			continue
		}
		if j, dup := seen[s.ID]; dup {
			errs = append(errs, fmt.Sprintf("supervisors %d and %d have the same id %q", j, i, s.ID))
			continue
		}
		seen[s.ID] = i
		ports := make(map[int]bool, len(s.Ports))
		for _, p := range s.Ports {
			switch {
			case p < 1 || p > 65535:
				errs = append(errs, fmt.Sprintf("supervisor %q has port %d, outside 1–65535", s.ID, p))
			case ports[p]:
				errs = append(errs, fmt.Sprintf("supervisor %q lists port %d twice", s.ID, p))
			}
			ports[p] = true
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(errs, "; "))
}

// machineState is what a supervisor is to the isolation scheduler.
type machineState uint8

const (
	shared    machineState = iota
	dedicated              // to the isolated topology owner, scheduled there
	held                   // by the pending isolated topology owner, still running there
)

type machine struct {
	id    string
	ports []int // ascending, unique, in 1–65535
	free  int   // ports no topology has claimed
	state machineState
	owner int // job index, when dedicated or held
	own   int // job index of the first isolated topology whose Current runs here; -1 for none
	cur   int // live workers of every requested topology's Current here
}

type job struct {
	id       string
	n        int
	execs    []int
	cur      []Placement // the Current's workers; nil without one
	keep     bool        // cur's worker indexes stand
	machines int         // supervisors of its own; 0 when shared
	asked    int         // Request.Machines
	res      Result
}

type cluster struct {
	ms     []*machine // by id
	byID   map[string]*machine
	claims map[Placement]int // slot → job index holding it
	jobs   []*job
	slots  int
}

func newCluster(live []Supervisor, reqs []Request, current map[string]Current) *cluster {
	c := &cluster{byID: make(map[string]*machine, len(live)), claims: make(map[Placement]int)}
	for _, s := range live {
		if _, dup := c.byID[s.ID]; dup || s.ID == "" {
			continue
		}
		var ports []int
		for _, p := range s.Ports {
			if p >= 1 && p <= 65535 {
				ports = append(ports, p)
			}
		}
		slices.Sort(ports)
		ports = slices.Compact(ports)
		m := &machine{id: s.ID, ports: ports, free: len(ports), owner: -1, own: -1}
		c.byID[s.ID] = m
		c.ms = append(c.ms, m)
		c.slots += len(ports)
	}
	slices.SortFunc(c.ms, func(a, b *machine) int { return strings.Compare(a.id, b.id) })

	ids := make(map[string]bool, len(reqs))
	for _, r := range reqs {
		if ids[r.Topology] {
			continue
		}
		ids[r.Topology] = true
		j := &job{id: r.Topology, n: WorkerCount(r.Plan, r.Workers)}
		j.execs = evenExecutors(r.Plan, j.n)
		if r.Machines > 0 {
			j.machines, j.asked = min(r.Machines, j.n), r.Machines
		}
		if cur, ok := current[r.Topology]; ok {
			j.cur = cur.Workers
			j.keep = len(cur.Workers) == j.n && len(cur.Executors) == len(r.Plan.Executors) &&
				!slices.ContainsFunc(cur.Executors, func(w int) bool { return w < 0 || w >= j.n })
		}
		c.jobs = append(c.jobs, j)
	}
	for ji, j := range c.jobs {
		for _, p := range j.cur {
			if m := c.machineOf(p); m != nil {
				m.cur++
				if j.machines > 0 && m.own < 0 {
					m.own = ji
				}
			}
		}
	}
	return c
}

// machineOf is the live supervisor of slot p, nil when p is not live.
func (c *cluster) machineOf(p Placement) *machine {
	m := c.byID[p.Supervisor]
	if m == nil {
		return nil
	}
	if _, ok := slices.BinarySearch(m.ports, p.Port); !ok {
		return nil
	}
	return m
}

// claim gives live slot p to job ji, unless some job holds it already.
func (c *cluster) claim(p Placement, ji int) {
	if _, taken := c.claims[p]; taken {
		return
	}
	c.claims[p] = ji
	c.byID[p.Supervisor].free--
}

func (c *cluster) release(p Placement) {
	delete(c.claims, p)
	c.byID[p.Supervisor].free++
}

func (c *cluster) holder(p Placement) (int, bool) {
	ji, ok := c.claims[p]
	return ji, ok
}

// isolate chooses the isolated topology ji's supervisors and places it
// there, or makes it pending.
func (c *cluster) isolate(ji int) {
	j := c.jobs[ji]
	mine := make(map[*machine]int)
	for _, p := range j.cur {
		if m := c.machineOf(p); m != nil && m.own == ji {
			mine[m]++
		}
	}
	var avail []*machine
	withSlots := 0
	for _, m := range c.ms {
		if len(m.ports) == 0 {
			continue
		}
		withSlots++
		if m.state == shared && (m.own < 0 || m.own <= ji) {
			// An earlier isolated topology's machine it did not keep is free.
			avail = append(avail, m)
		}
	}
	if len(avail) < j.machines {
		c.hold(ji)
		j.res.Pending = c.machinesShort(ji, len(avail), withSlots)
		return
	}
	// Preference: its own machines (most of its workers first), then those
	// with the fewest other workers to move off, the largest, the lowest id;
	// each taken only if the machines chosen can still hold every worker.
	slices.SortStableFunc(avail, func(a, b *machine) int {
		return cmp.Or(
			cmp.Compare(mine[b], mine[a]),
			cmp.Compare(a.cur-mine[a], b.cur-mine[b]),
			cmp.Compare(len(b.ports), len(a.ports)),
		)
	})
	bySize := slices.Clone(avail)
	slices.SortStableFunc(bySize, func(a, b *machine) int { return cmp.Compare(len(b.ports), len(a.ports)) })
	chosen := make(map[*machine]bool, j.machines)
	// largest is the slots of the k largest available machines not chosen
	// and not skip.
	largest := func(k int, skip *machine) int {
		sum := 0
		for _, m := range bySize {
			if k == 0 {
				break
			}
			if !chosen[m] && m != skip {
				sum += len(m.ports)
				k--
			}
		}
		return sum
	}
	if most := largest(j.machines, nil); most < j.n {
		c.hold(ji)
		j.res.Pending = fmt.Sprintf("needs %s on %s of its own (isolation.scheduler.machines), and the %s with the most slots %s %s",
			plural(j.n, "worker slot"), plural(j.machines, "machine"), plural(j.machines, "free machine"), have(j.machines), plural(most, "slot"))
		return
	}
	var ms []*machine
	slots := 0
	for len(ms) < j.machines {
		for _, m := range avail {
			if !chosen[m] && slots+len(m.ports)+largest(j.machines-len(ms)-1, m) >= j.n {
				chosen[m] = true
				ms = append(ms, m)
				slots += len(m.ports)
				break
			}
		}
	}
	slices.SortFunc(ms, func(a, b *machine) int { return strings.Compare(a.id, b.id) })
	for _, m := range ms {
		m.state, m.owner = dedicated, ji
	}
	for _, p := range j.cur {
		if m := c.machineOf(p); m != nil && chosen[m] {
			c.claim(p, ji)
		}
	}
	c.place(ji, ms)
}

// hold makes the supervisors pending isolated topology ji runs on take no
// new worker, and reserves its running workers' slots.
func (c *cluster) hold(ji int) {
	for _, p := range c.jobs[ji].cur {
		if m := c.machineOf(p); m != nil && m.own == ji {
			m.state, m.owner = held, ji
			c.claim(p, ji)
		}
	}
}

// place gives job ji's workers slots on ms (by id), keeping those its
// claims allow, or makes it pending. The slots it holds but does not use
// are released.
func (c *cluster) place(ji int, ms []*machine) {
	j := c.jobs[ji]
	workers := make([]Placement, j.n)
	placed := make([]bool, j.n)
	count := make(map[*machine]int)
	used := make(map[Placement]bool)
	kept := 0
	if j.keep {
		for w, p := range j.cur {
			if h, ok := c.holder(p); ok && h == ji && !used[p] {
				workers[w], placed[w], used[p] = p, true, true
				count[c.byID[p.Supervisor]]++
				kept++
			}
		}
	}
	// reuse: the slots it holds and keeps no worker on, by supervisor.
	reuse := make(map[*machine][]int)
	var reused []Placement
	for _, p := range j.cur {
		if h, ok := c.holder(p); ok && h == ji && !used[p] {
			used[p] = true
			m := c.byID[p.Supervisor]
			reuse[m] = append(reuse[m], p.Port)
			reused = append(reused, p)
		}
	}
	for _, ports := range reuse {
		slices.Sort(ports)
	}
	free := 0
	for _, m := range ms {
		free += m.free + len(reuse[m])
	}
	if need := j.n - kept; need > free {
		j.res.Pending = c.slotsShort(ji, need, kept, ms, reuse)
		return
	}
	for w := range j.n {
		if placed[w] {
			continue
		}
		var best *machine
		for _, m := range ms {
			if m.free+len(reuse[m]) > 0 && (best == nil || better(m, best, count, reuse)) {
				best = m
			}
		}
		var port int
		if ports := reuse[best]; len(ports) > 0 {
			port, reuse[best] = ports[0], ports[1:]
		} else {
			for _, p := range best.ports {
				if _, taken := c.claims[Placement{best.id, p}]; !taken {
					port = p
					break
				}
			}
			c.claim(Placement{best.id, port}, ji)
		}
		workers[w] = Placement{best.id, port}
		count[best]++
	}
	for _, p := range reused {
		if ports := reuse[c.byID[p.Supervisor]]; slices.Contains(ports, p.Port) {
			c.release(p)
		}
	}
	j.res = Result{Workers: workers, Executors: j.execs}
}

// better reports whether the next worker goes to m rather than best: the
// fewer of the topology's workers, then a slot it held, then the more
// free slots; ties go to the first in ms, the lower id.
func better(m, best *machine, count map[*machine]int, reuse map[*machine][]int) bool {
	if count[m] != count[best] {
		return count[m] < count[best]
	}
	if rm, rb := len(reuse[m]) > 0, len(reuse[best]) > 0; rm != rb {
		return rm
	}
	return m.free+len(reuse[m]) > best.free+len(reuse[best])
}

// slotsShort explains why job ji's need new workers do not fit on ms.
func (c *cluster) slotsShort(ji, need, kept int, ms []*machine, reuse map[*machine][]int) string {
	j := c.jobs[ji]
	if len(c.ms) == 0 {
		return fmt.Sprintf("needs %s and no supervisor is alive", plural(j.n, "worker slot"))
	}
	free, freeOn := 0, 0
	for _, m := range ms {
		if f := m.free + len(reuse[m]); f > 0 {
			free += f
			freeOn++
		}
	}
	others, isolated := 0, 0
	for _, m := range c.ms {
		for _, port := range m.ports {
			h, ok := c.holder(Placement{m.id, port})
			switch {
			case ok && h != ji:
				others++
			case !ok && m.state != shared:
				isolated++
			}
		}
	}
	var b strings.Builder
	if kept > 0 {
		fmt.Fprintf(&b, "needs %d more worker %s for its %d workers", need, pluralWord(need, "slot"), j.n)
	} else {
		fmt.Fprintf(&b, "needs %s", plural(need, "worker slot"))
	}
	fmt.Fprintf(&b, ", %d free on %s (%s, %s, %d used by other topologies",
		free, plural(freeOn, "supervisor"), plural(len(c.ms), "supervisor"), plural(c.slots, "slot"), others)
	if kept > 0 {
		fmt.Fprintf(&b, ", %d by its own running workers", kept)
	}
	if isolated > 0 {
		fmt.Fprintf(&b, ", %d unused on supervisors kept for isolated topologies", isolated)
	}
	b.WriteString(")")
	return b.String()
}

// machinesShort explains why isolated job ji does not get its machines.
func (c *cluster) machinesShort(ji, free, withSlots int) string {
	j := c.jobs[ji]
	var b strings.Builder
	fmt.Fprintf(&b, "isolation.scheduler.machines gives it %s", plural(j.asked, "machine"))
	if j.asked > j.machines {
		fmt.Fprintf(&b, " (%d for its %s)", j.machines, plural(j.n, "worker"))
	}
	fmt.Fprintf(&b, ", %d %s free (%s with slots", free, isAre(free), plural(withSlots, "supervisor"))
	if taken := withSlots - free; taken > 0 {
		fmt.Fprintf(&b, ", %d kept for other isolated topologies", taken)
	}
	b.WriteString(")")
	return b.String()
}

func plural(n int, what string) string {
	return fmt.Sprintf("%d %s", n, pluralWord(n, what))
}

func pluralWord(n int, what string) string {
	if n == 1 {
		return what
	}
	return what + "s"
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func have(n int) string {
	if n == 1 {
		return "has"
	}
	return "have"
}
