package supervisor

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/gale-stream/gale/internal/countfile"
	"github.com/gale-stream/gale/internal/metrics/components"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// A supervisor's totals: per topology, the counters of every worker it
// ran for it, those that ended included, so that the topology's counters
// never go down when a worker is killed, restarted or moved away. A
// worker's counters are those of its last heartbeat (what it did after,
// if it was killed, is not counted); when its process ends they are
// added to its topology's retired counters. The book is kept in
// DIR/counters.json, written before every report that changed it is
// sent, so a restarted supervisor reports at least what it reported
// before: a saved worker that still runs is adopted with its saved
// counters until its next heartbeat, one that is gone has them retired.
// A topology assigned nowhere (killed) is dropped from the book once
// none of its workers runs here.

// countersFile is the book's file in the supervisor's directory.
const countersFile = "counters.json"

// counterBook is the supervisor's totals. Owned by Run's loop.
type counterBook struct {
	loaded  bool
	retired map[string][]*nimbuspb.ComponentStats // by topology id
	// adopted holds, by port, the saved counters of a worker adopted at
	// the start, until its first heartbeat since.
	adopted map[int]*nimbuspb.WorkerReport
	written []byte // the file's content as last written
}

// book returns the counter book, loading it from DIR/counters.json on
// first use (after adopt: the workers that still run are known).
func (s *Supervisor) book() *counterBook {
	b := s.counters
	if b == nil {
		b = &counterBook{retired: map[string][]*nimbuspb.ComponentStats{}, adopted: map[int]*nimbuspb.WorkerReport{}}
		s.counters = b
	}
	if b.loaded {
		return b
	}
	b.loaded = true
	saved, raw, err := readCounters(filepath.Join(s.cfg.Dir, countersFile))
	if err != nil {
		s.log.Error("cannot read the saved counters; the topologies' totals start again from the workers running", "err", err)
		return b
	}
	b.written = raw
	for _, t := range saved.GetTotals() {
		b.retired[t.GetTopology()] = t.GetComponents()
	}
	for _, w := range saved.GetWorkers() {
		if p := s.procs[int(w.GetPort())]; p != nil && p.Alive && int32(p.PID) == w.GetPid() && p.LaunchedAt.UnixMilli() == w.GetStartedUnixMs() {
			b.adopted[int(w.GetPort())] = w
			continue
		}
		// Ended while no supervisor ran: its counter file is as it left it.
		gone := &proc{Observed: Observed{Port: int(w.GetPort()), PID: int(w.GetPid()), Running: Desired{Topology: w.GetTopology()}}}
		b.retire(w.GetTopology(), s.withCountFile(gone, w.GetComponents()))
	}
	return b
}

// readCounters reads a saved book: totals are the retired counters,
// workers the running workers' counters.
func readCounters(path string) (*nimbuspb.ReportRequest, []byte, error) {
	r := &nimbuspb.ReportRequest{}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil, nil
	}
	if err != nil {
		return r, nil, err
	}
	if err := protojson.Unmarshal(b, r); err != nil {
		return &nimbuspb.ReportRequest{}, nil, fmt.Errorf("supervisor: %s: %w (move it away to start the counters afresh)", path, err)
	}
	return r, b, nil
}

// retire adds an ended worker's counters to its topology's.
func (b *counterBook) retire(topology string, cs []*nimbuspb.ComponentStats) {
	if len(cs) == 0 {
		return
	}
	b.retired[topology] = addComponents(b.retired[topology], cs)
}

// workerCounts is worker p's counters since it started: its last
// heartbeat's, or those saved before an adoption until its first.
func (s *Supervisor) workerCounts(p *proc) []*nimbuspb.ComponentStats {
	if !p.beat.Time.IsZero() {
		return components.Totals(componentStats(p.beat.Spouts, p.beat.Bolts, s.cfg.Host, int32(p.Port)))
	}
	if w := s.book().adopted[p.Port]; w != nil && int32(p.PID) == w.GetPid() {
		return w.GetComponents()
	}
	return nil
}

// retired notes that worker p's process has ended: its counters join
// its topology's retired ones. Called once per process, when its exit is
// seen.
func (s *Supervisor) retired(p *proc) {
	b := s.book()
	b.retire(p.Running.Topology, s.withCountFile(p, s.workerCounts(p)))
	if w := b.adopted[p.Port]; w != nil && int32(p.PID) == w.GetPid() {
		delete(b.adopted, p.Port)
	}
}

// countsFile is the name of a worker's counter file in its directory
// (internal/countfile).
const countsFile = "counts"

// countsPath is the counter file of the worker on port.
func (s *Supervisor) countsPath(port int) string {
	return filepath.Join(s.cfg.Dir, "workers", strconv.Itoa(port), countsFile)
}

// withCountFile is cs, the last heartbeat's counters of ended worker p,
// with each spout's acked, failed, emitted and transferred raised to
// what p's counter file holds (the counts of a worker killed since its
// heartbeat), if the file is whole and p's (its topology and pid). The
// file is removed. cs is not changed.
func (s *Supervisor) withCountFile(p *proc, cs []*nimbuspb.ComponentStats) []*nimbuspb.ComponentStats {
	path := s.countsPath(p.Port)
	l, counts, err := countfile.Read(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("ignored the worker's counter file", "port", p.Port, "pid", p.PID, "err", err)
		}
		return cs
	}
	if l.Topology != p.Running.Topology || l.PID != p.PID {
		s.log.Warn("ignored a counter file of another worker", "port", p.Port, "pid", p.PID, "file_pid", l.PID, "file_topology", l.Topology)
		return cs
	}
	countfile.Remove(path)
	byComp := map[string]*countfile.Counts{}
	for i, sl := range l.Slots {
		c := byComp[sl.Component]
		if c == nil {
			c = &countfile.Counts{}
			byComp[sl.Component] = c
		}
		c.Acked += counts[i].Acked
		c.Failed += counts[i].Failed
		c.Emitted += counts[i].Emitted
		c.Transferred += counts[i].Transferred
	}
	out := make([]*nimbuspb.ComponentStats, 0, len(cs)+len(byComp))
	for _, c := range cs {
		if f := byComp[c.GetComponent()]; f != nil && c.GetKind() == "spout" {
			c = proto.Clone(c).(*nimbuspb.ComponentStats)
			c.Acked, c.Failed = max(c.Acked, f.Acked), max(c.Failed, f.Failed)
			c.Emitted, c.Transferred = max(c.Emitted, f.Emitted), max(c.Transferred, f.Transferred)
			delete(byComp, c.GetComponent())
		}
		out = append(out, c)
	}
	for _, id := range slices.Sorted(maps.Keys(byComp)) {
		f := byComp[id]
		out = append(out, &nimbuspb.ComponentStats{Component: id, Kind: "spout",
			Acked: f.Acked, Failed: f.Failed, Emitted: f.Emitted, Transferred: f.Transferred})
	}
	return out
}

// totals is the book's totals, one per topology in id order, and saves
// the book if it changed. A topology assigned nowhere whose workers here
// have all ended is dropped.
func (s *Supervisor) totals() []*nimbuspb.TopologyTotals {
	b := s.book()
	running := map[string][]*nimbuspb.ComponentStats{}
	saved := &nimbuspb.ReportRequest{Supervisor: s.cfg.ID}
	for _, port := range slices.Sorted(maps.Keys(s.procs)) {
		p := s.procs[port]
		if !p.Alive {
			continue
		}
		cs := s.workerCounts(p)
		running[p.Running.Topology] = addComponents(running[p.Running.Topology], cs)
		if len(cs) > 0 {
			saved.Workers = append(saved.Workers, &nimbuspb.WorkerReport{Topology: p.Running.Topology, Port: int32(p.Port),
				Pid: int32(p.PID), StartedUnixMs: p.LaunchedAt.UnixMilli(), Components: cs})
		}
	}
	for id := range b.retired {
		if _, ok := running[id]; !ok && s.known && !s.assigned[id] {
			delete(b.retired, id) // killed
		}
	}
	ids := slices.Sorted(maps.Keys(b.retired))
	for id := range running {
		if _, ok := b.retired[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	out := make([]*nimbuspb.TopologyTotals, 0, len(ids))
	for _, id := range ids {
		if r := b.retired[id]; len(r) > 0 {
			saved.Totals = append(saved.Totals, &nimbuspb.TopologyTotals{Topology: id, Components: r})
		}
		out = append(out, &nimbuspb.TopologyTotals{Topology: id, Components: addComponents(b.retired[id], running[id])})
	}
	s.saveCounters(saved)
	return out
}

// countersJSON is how the book is saved.
var countersJSON = protojson.MarshalOptions{UseProtoNames: true}

// saveCounters writes the book to DIR/counters.json if it changed.
func (s *Supervisor) saveCounters(saved *nimbuspb.ReportRequest) {
	b := s.book()
	raw, err := countersJSON.Marshal(saved)
	if err != nil {
		s.log.Error("cannot encode the counters", "err", err)
		return
	}
	if bytes.Equal(raw, b.written) {
		return
	}
	if err := writeFileAtomic(filepath.Join(s.cfg.Dir, countersFile), raw, 0o600); err != nil {
		s.log.Error("cannot save the counters", "err", err)
		return
	}
	b.written = raw
}

// addComponents is a + b, component by component (matched by id), in
// component id order, counters only: a total. Neither is changed.
func addComponents(a, b []*nimbuspb.ComponentStats) []*nimbuspb.ComponentStats {
	return components.Totals(components.Sum(a, b))
}
