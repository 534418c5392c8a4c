package coord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gale-stream/gale/internal/backoff"
)

var (
	// ErrNotFound says the record asked for does not exist.
	ErrNotFound = errors.New("coord: not found")
	// ErrExists says a record with that name or id exists already.
	ErrExists = errors.New("coord: exists")
	// ErrClosed says the Store was closed.
	ErrClosed = errors.New("coord: store closed")
	// ErrNotLeader says a leader's write was refused because its term
	// had ended: another nimbus may lead, and the write is its to make.
	ErrNotLeader = errors.New("coord: no longer the leader")
	// ErrChanged says a write was refused because a record it was
	// decided on changed after it was read: read it again, decide again.
	ErrChanged = errors.New("coord: changed since it was read")
)

// revSetter is a record that carries the revision it was read at.
type revSetter interface{ setRev(int64) }

// Store reads and writes Gale's records in etcd. It is safe for
// concurrent use. It does not own the client: Close stops the goroutines
// the Store started (Changes, memberships, leaderships) and waits for
// them, and the caller closes the client after it.
type Store struct {
	c *clientv3.Client
	// ctx is the Store's lifetime, cancelled by Close; every goroutine it
	// starts derives from it.
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup
	mu   struct {
		sync.Mutex
		closed bool
	}
}

// NewStore returns a Store over c.
func NewStore(c *clientv3.Client) *Store {
	ctx, stop := context.WithCancel(context.Background())
	return &Store{c: c, ctx: ctx, stop: stop}
}

// Close stops every goroutine the Store started and waits for them.
// Memberships still open revoke their leases on the way out. Close is
// idempotent.
func (s *Store) Close() {
	s.mu.Lock()
	s.mu.closed = true
	s.mu.Unlock()
	s.stop()
	s.wg.Wait()
}

// start runs f in a goroutine Close waits for; false if the Store is
// closed.
func (s *Store) start(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
	return true
}

// CreateTopology stores t and takes its name, in one transaction. It
// fails with ErrExists, naming the holder, if the name is taken or the id
// is in use. Nimbus creates through its Leadership; this unfenced form is
// for tests and tools.
func (s *Store) CreateTopology(ctx context.Context, t Topology) error {
	return s.createTopology(ctx, t, nil)
}

// createTopology is CreateTopology, done only while fence, when not nil,
// holds.
func (s *Store) createTopology(ctx context.Context, t Topology, f *fence) error {
	if t.ID == "" || t.Name == "" {
		return fmt.Errorf("coord: topology needs an id and a name, got id %q name %q", t.ID, t.Name)
	}
	v, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("coord: topology %q: %w", t.Name, err)
	}
	nk, tk := namesPrefix+t.Name, TopologiesPrefix+t.ID
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(nk), "=", 0),
		clientv3.Compare(clientv3.CreateRevision(tk), "=", 0)}
	if f != nil {
		cmps = append(cmps, f.cmp())
	}
	r, err := s.c.Txn(ctx).
		If(cmps...).
		Then(clientv3.OpPut(nk, t.ID), clientv3.OpPut(tk, string(v))).
		Else(clientv3.OpGet(nk)).
		Commit()
	if err != nil {
		return fmt.Errorf("coord: create topology %q: %w", t.Name, err)
	}
	if !r.Succeeded {
		if f != nil {
			if err := f.check(ctx, s.c); err != nil {
				return fmt.Errorf("coord: create topology %q: %w", t.Name, err)
			}
		}
		if kvs := r.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
			return fmt.Errorf("%w: topology name %q is taken by topology %s; kill it first or pick another name",
				ErrExists, t.Name, kvs[0].Value)
		}
		return fmt.Errorf("%w: topology id %s is in use", ErrExists, t.ID)
	}
	return nil
}

// UpdateTopology replaces the record of an existing topology, if it is
// still at the revision t was read at (t.Rev). Its name must not change.
// ErrChanged if the record changed since (read it again, check again);
// ErrNotFound if there is no topology t.ID named t.Name. Nimbus updates
// through its Leadership; this unfenced form is for tests and tools.
func (s *Store) UpdateTopology(ctx context.Context, t Topology) error {
	return s.writeTopology(ctx, TopologyWrite{ID: t.ID, Name: t.Name, Rev: t.Rev, Topology: &t}, nil)
}

// TopologyWrite is what a leader writes of one topology, in one
// transaction: its record, its assignment, or the removal of both. The
// transaction commits only while the records are at the revisions they
// were read at, so that a write decided on a record cannot overwrite a
// change made since (a kill landing between a rebalance's read and its
// write), and only while the leader's term holds.
type TopologyWrite struct {
	// ID and Name are the topology's.
	ID, Name string
	// Rev is the mod revision of the topology's record as read, always
	// compared; 0 says there is no record (the removal of an assignment
	// whose topology is gone).
	Rev int64
	// AssignmentRev is the mod revision of the topology's assignment as
	// read, 0 for none; compared when the write puts or deletes the
	// assignment.
	AssignmentRev int64
	// Topology, when not nil, replaces the record (its Rev is ignored).
	Topology *Topology
	// Assignment, when not nil, replaces the assignment; otherwise
	// DeleteAssignment removes it.
	Assignment       *Assignment
	DeleteAssignment bool
	// Remove deletes the record, the name and the assignment; the other
	// fields but ID, Name and Rev are then ignored.
	Remove bool
}

// writeTopology applies w, only while fence, when not nil, holds:
// ErrNotLeader once the term has ended, ErrChanged when a record is no
// longer at the revision w was decided on, the etcd error (such as a
// request too large) otherwise. It writes nothing when it fails.
func (s *Store) writeTopology(ctx context.Context, w TopologyWrite, f *fence) error {
	tk, ak := TopologiesPrefix+w.ID, AssignmentsPrefix+w.ID
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(tk), "=", w.Rev)}
	var ops []clientv3.Op
	switch {
	case w.Remove:
		if w.Name == "" {
			return fmt.Errorf("coord: remove topology %s: no name given", w.ID)
		}
		ops = append(ops, clientv3.OpDelete(tk), clientv3.OpDelete(namesPrefix+w.Name), clientv3.OpDelete(ak))
	default:
		if w.Topology != nil {
			if w.Topology.ID != w.ID || w.Topology.Name != w.Name {
				return fmt.Errorf("coord: update topology %s named %q with the record of %s named %q",
					w.ID, w.Name, w.Topology.ID, w.Topology.Name)
			}
			v, err := json.Marshal(w.Topology)
			if err != nil {
				return fmt.Errorf("coord: topology %q: %w", w.Name, err)
			}
			cmps = append(cmps, clientv3.Compare(clientv3.Value(namesPrefix+w.Name), "=", w.ID))
			ops = append(ops, clientv3.OpPut(tk, string(v)))
		}
		switch {
		case w.Assignment != nil:
			if w.Assignment.Topology != w.ID {
				return fmt.Errorf("coord: the assignment of %s written as %s's", w.Assignment.Topology, w.ID)
			}
			v, err := json.Marshal(w.Assignment)
			if err != nil {
				return fmt.Errorf("coord: assignment of %s: %w", w.ID, err)
			}
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(ak), "=", w.AssignmentRev))
			ops = append(ops, clientv3.OpPut(ak, string(v)))
		case w.DeleteAssignment:
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(ak), "=", w.AssignmentRev))
			ops = append(ops, clientv3.OpDelete(ak))
		}
	}
	if len(ops) == 0 {
		return nil
	}
	if f != nil {
		cmps = append(cmps, f.cmp())
	}
	r, err := s.c.Txn(ctx).If(cmps...).Then(ops...).
		Else(clientv3.OpGet(tk, clientv3.WithKeysOnly()), clientv3.OpGet(namesPrefix+w.Name)).
		Commit()
	if err != nil {
		return fmt.Errorf("coord: write topology %s: %w", w.ID, err)
	}
	if r.Succeeded {
		return nil
	}
	if f != nil {
		if err := f.check(ctx, s.c); err != nil {
			return fmt.Errorf("coord: write topology %s: %w", w.ID, err)
		}
	}
	named := r.Responses[1].GetResponseRange().Kvs
	gone := len(r.Responses[0].GetResponseRange().Kvs) == 0 || len(named) == 0 || string(named[0].Value) != w.ID
	if gone && (w.Rev != 0 || w.Topology != nil) {
		return fmt.Errorf("%w: topology %s named %q", ErrNotFound, w.ID, w.Name)
	}
	return fmt.Errorf("%w: topology %s named %q, since revision %d", ErrChanged, w.ID, w.Name, w.Rev)
}

// Topology returns the topology with id id, or ErrNotFound.
func (s *Store) Topology(ctx context.Context, id string) (Topology, error) {
	var t Topology
	err := s.get(ctx, TopologiesPrefix+id, &t)
	return t, err
}

// TopologyByName returns the topology named name, or ErrNotFound.
func (s *Store) TopologyByName(ctx context.Context, name string) (Topology, error) {
	r, err := s.c.Get(ctx, namesPrefix+name)
	if err != nil {
		return Topology{}, fmt.Errorf("coord: topology %q: %w", name, err)
	}
	if len(r.Kvs) == 0 {
		return Topology{}, fmt.Errorf("%w: no topology named %q", ErrNotFound, name)
	}
	return s.Topology(ctx, string(r.Kvs[0].Value))
}

// Topologies returns every topology, ordered by id.
func (s *Store) Topologies(ctx context.Context) ([]Topology, error) {
	return list[Topology](ctx, s, TopologiesPrefix)
}

// DeleteTopology removes a topology's record, its name and its
// assignment in one transaction; ErrNotFound if there is no such
// topology.
func (s *Store) DeleteTopology(ctx context.Context, id string) error {
	return s.deleteTopology(ctx, id, nil)
}

// deleteTopology is DeleteTopology, done only while fence, when not
// nil, holds.
func (s *Store) deleteTopology(ctx context.Context, id string, fence *fence) error {
	tk := TopologiesPrefix + id
	for {
		r, err := s.c.Get(ctx, tk)
		if err != nil {
			return fmt.Errorf("coord: delete topology %s: %w", id, err)
		}
		if len(r.Kvs) == 0 {
			return fmt.Errorf("%w: topology %s", ErrNotFound, id)
		}
		var t Topology
		if err := json.Unmarshal(r.Kvs[0].Value, &t); err != nil {
			return fmt.Errorf("coord: %s: bad record: %w", tk, err)
		}
		cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(tk), "=", r.Kvs[0].ModRevision)}
		if fence != nil {
			cmps = append(cmps, fence.cmp())
		}
		tr, err := s.c.Txn(ctx).
			If(cmps...).
			Then(clientv3.OpDelete(tk), clientv3.OpDelete(namesPrefix+t.Name),
				clientv3.OpDelete(AssignmentsPrefix+id)).
			Commit()
		if err != nil {
			return fmt.Errorf("coord: delete topology %s: %w", id, err)
		}
		if tr.Succeeded {
			return nil
		}
		if fence != nil {
			if err := fence.check(ctx, s.c); err != nil {
				return fmt.Errorf("coord: delete topology %s: %w", id, err)
			}
		}
		// Changed between the read and the delete: read it again.
	}
}

// PutAssignment stores a, replacing the topology's assignment, with no
// compare: for tests and tools. Nimbus writes assignments through its
// Leadership's Write.
func (s *Store) PutAssignment(ctx context.Context, a Assignment) error {
	return s.putAssignment(ctx, a, nil)
}

// DeleteAssignment removes a topology's assignment; none is no error.
func (s *Store) DeleteAssignment(ctx context.Context, id string) error {
	return s.deleteAssignment(ctx, id, nil)
}

// putAssignment stores a if fence, when not nil, holds.
func (s *Store) putAssignment(ctx context.Context, a Assignment, fence *fence) error {
	if a.Topology == "" {
		return errors.New("coord: assignment needs a topology id")
	}
	v, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("coord: assignment of %s: %w", a.Topology, err)
	}
	if err := s.write(ctx, fence, clientv3.OpPut(AssignmentsPrefix+a.Topology, string(v))); err != nil {
		return fmt.Errorf("coord: put assignment of %s: %w", a.Topology, err)
	}
	return nil
}

// deleteAssignment removes a topology's assignment if fence, when not
// nil, holds.
func (s *Store) deleteAssignment(ctx context.Context, id string, fence *fence) error {
	if err := s.write(ctx, fence, clientv3.OpDelete(AssignmentsPrefix+id)); err != nil {
		return fmt.Errorf("coord: delete assignment of %s: %w", id, err)
	}
	return nil
}

// write applies op, in a transaction conditioned on fence when there is
// one: ErrNotLeader if the fence no longer holds.
func (s *Store) write(ctx context.Context, f *fence, op clientv3.Op) error {
	if f == nil {
		_, err := s.c.Do(ctx, op)
		return err
	}
	r, err := s.c.Txn(ctx).If(f.cmp()).Then(op).Commit()
	if err != nil {
		return err
	}
	if !r.Succeeded {
		return f.lost()
	}
	return nil
}

// Snapshot returns every topology, every assignment and the live
// supervisors, each ordered by id, as of one revision of etcd: what the
// leader decides on, with no write landing between its reads.
func (s *Store) Snapshot(ctx context.Context) ([]Topology, []Assignment, []Supervisor, error) {
	r, err := s.c.Txn(ctx).Then(
		clientv3.OpGet(TopologiesPrefix, clientv3.WithPrefix()),
		clientv3.OpGet(AssignmentsPrefix, clientv3.WithPrefix()),
		clientv3.OpGet(SupervisorsPrefix, clientv3.WithPrefix()),
	).Commit()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("coord: snapshot: %w", err)
	}
	ts, err := decode[Topology](r.Responses[0].GetResponseRange().Kvs)
	if err != nil {
		return nil, nil, nil, err
	}
	as, err := decode[Assignment](r.Responses[1].GetResponseRange().Kvs)
	if err != nil {
		return nil, nil, nil, err
	}
	sups, err := decode[Supervisor](r.Responses[2].GetResponseRange().Kvs)
	if err != nil {
		return nil, nil, nil, err
	}
	return ts, as, sups, nil
}

// Assignments returns every assignment, ordered by topology id.
func (s *Store) Assignments(ctx context.Context) ([]Assignment, error) {
	return list[Assignment](ctx, s, AssignmentsPrefix)
}

// Supervisors returns the live supervisors, ordered by id.
func (s *Store) Supervisors(ctx context.Context) ([]Supervisor, error) {
	return list[Supervisor](ctx, s, SupervisorsPrefix)
}

// Nimbuses returns the live nimbuses, ordered by id.
func (s *Store) Nimbuses(ctx context.Context) ([]Nimbus, error) {
	return list[Nimbus](ctx, s, membersPrefix)
}

// Holders returns the ids of the live nimbuses holding the artifact with
// checksum sha, in order.
func (s *Store) Holders(ctx context.Context, sha string) ([]string, error) {
	r, err := s.c.Get(ctx, holdsPrefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, fmt.Errorf("coord: holders of %s: %w", sha, err)
	}
	var ids []string
	for _, kv := range r.Kvs {
		id, h, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), holdsPrefix), "/")
		if ok && h == sha {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// Holds returns, for every artifact some live nimbus holds, the ids of
// its holders, in order: Holders of every checksum in one read.
func (s *Store) Holds(ctx context.Context) (map[string][]string, error) {
	r, err := s.c.Get(ctx, holdsPrefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, fmt.Errorf("coord: holds: %w", err)
	}
	holds := make(map[string][]string)
	for _, kv := range r.Kvs {
		id, sha, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), holdsPrefix), "/")
		if ok {
			holds[sha] = append(holds[sha], id)
		}
	}
	return holds, nil
}

func (s *Store) get(ctx context.Context, key string, v any) error {
	r, err := s.c.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("coord: get %s: %w", key, err)
	}
	if len(r.Kvs) == 0 {
		return fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	if err := json.Unmarshal(r.Kvs[0].Value, v); err != nil {
		return fmt.Errorf("coord: %s: bad record: %w", key, err)
	}
	if rs, ok := v.(revSetter); ok {
		rs.setRev(r.Kvs[0].ModRevision)
	}
	return nil
}

func list[T any](ctx context.Context, s *Store, prefix string) ([]T, error) {
	r, err := s.c.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("coord: list %s: %w", prefix, err)
	}
	return decode[T](r.Kvs)
}

// decode reads records, with the revision of each when it keeps one.
func decode[T any](kvs []*mvccpb.KeyValue) ([]T, error) {
	out := make([]T, 0, len(kvs))
	for _, kv := range kvs {
		var v T
		if err := json.Unmarshal(kv.Value, &v); err != nil {
			return nil, fmt.Errorf("coord: %s: bad record: %w", kv.Key, err)
		}
		if rs, ok := any(&v).(revSetter); ok {
			rs.setRev(kv.ModRevision)
		}
		out = append(out, v)
	}
	return out, nil
}

// Changes returns a channel that receives once at once, then whenever
// anything under prefix changes, and again once a broken watch (a
// compaction, a lost leader) is re-established. Sends coalesce: the
// channel holds at most one, so the caller re-reads what it needs on
// each receive, and a slow reader misses nothing but repeats. The
// channel is closed when ctx is done or the Store is closed. The prefixes
// are TopologiesPrefix, AssignmentsPrefix, SupervisorsPrefix and
// NimbusPrefix.
func (s *Store) Changes(ctx context.Context, prefix string) <-chan struct{} {
	ch := make(chan struct{}, 1)
	ch <- struct{}{}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel)
	ok := s.start(func() {
		defer close(ch)
		defer cancel()
		defer stop()
		s.watch(ctx, prefix, ch)
	})
	if !ok {
		stop()
		cancel()
		close(ch)
	}
	return ch
}

// watch notifies ch of every change under prefix until ctx is done.
func (s *Store) watch(ctx context.Context, prefix string, ch chan struct{}) {
	notify := func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	for fails := 0; ; {
		// The client resumes a watch over a reconnection by itself,
		// from the revision after the last it saw, so an etcd restart
		// loses no event. It closes the channel on a compaction, a
		// cancellation or (WithRequireLeader) a member without a
		// leader: then start over. Every new watch notifies once it is
		// in place, the first included, for what changed before it.
		wctx, wcancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		for r := range s.c.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithCreatedNotify()) {
			if r.Err() != nil {
				break
			}
			if r.Created {
				fails = 0
			}
			if r.Created || len(r.Events) > 0 {
				notify()
			}
		}
		wcancel()
		fails++
		if !sleep(ctx, retryDelay(fails)) {
			return
		}
	}
}

// retryWait is how long the watches, the keep-alive and the campaign
// wait before trying etcd again.
var retryWait = backoff.Doubling{Min: 100 * time.Millisecond, Max: 2 * time.Second}

// retryDelay is the wait before retry attempt n (from 0): 0, then
// doubling from 100 ms to 2 s.
func retryDelay(n int) time.Duration {
	if n == 0 {
		return 0
	}
	return retryWait.Delay(n)
}

// sleep waits d or until ctx is done; false if ctx is done.
func sleep(ctx context.Context, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
