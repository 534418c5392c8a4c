package coord

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// Leadership is a nimbus's term as leader. It ends when the nimbus
// resigns, when its membership's lease is lost (revoked, expired, or
// Close), or when its election key is deleted; Lost then closes. Its
// methods are safe for concurrent use.
type Leadership struct {
	s      *Store
	e      *concurrency.Election
	sess   *concurrency.Session
	cancel context.CancelFunc
	lost   chan struct{}
}

// Campaign blocks until m's nimbus is the leader, or ctx is done. The
// election key is bound to m's lease, so the term cannot outlive the
// membership. It fails, to be called again, if m's lease is being
// replaced at the moment.
func (s *Store) Campaign(ctx context.Context, m *Membership) (*Leadership, error) {
	if m.nimbus == "" {
		return nil, errors.New("coord: Campaign needs a nimbus membership")
	}
	lctx, cancel := context.WithCancel(s.ctx)
	// A session on the membership's lease: its own keep-alive shares the
	// membership's stream, and Orphan (unlike Close) leaves the lease be.
	sess, err := concurrency.NewSession(s.c, concurrency.WithLease(m.lease()), concurrency.WithContext(lctx))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("coord: campaign of nimbus %s: %w", m.nimbus, err)
	}
	e := concurrency.NewElection(sess, electionPrefix)
	if err := e.Campaign(ctx, m.nimbus); err != nil {
		sess.Orphan()
		cancel()
		return nil, fmt.Errorf("coord: campaign of nimbus %s: %w", m.nimbus, err)
	}
	l := &Leadership{s: s, e: e, sess: sess, cancel: cancel, lost: make(chan struct{})}
	if !s.start(func() { l.run(lctx, s.c) }) {
		sess.Orphan()
		cancel()
		return nil, ErrClosed
	}
	return l, nil
}

// Lost is closed when the term ends.
func (l *Leadership) Lost() <-chan struct{} { return l.lost }

// Resign ends the term: it deletes the election key, so that another
// nimbus may lead, and waits for Lost to close.
func (l *Leadership) Resign(ctx context.Context) error {
	err := l.e.Resign(ctx)
	l.cancel()
	<-l.lost
	if err != nil {
		return fmt.Errorf("coord: resign: %w", err)
	}
	return nil
}

// run closes lost when the session ends (the lease is gone) or the
// election key is deleted, or when ctx is done.
func (l *Leadership) run(ctx context.Context, c *clientv3.Client) {
	defer close(l.lost)
	defer l.sess.Orphan()
	key, rev := l.e.Key(), l.e.Rev()+1
	for fails := 0; ; fails++ {
		wch := c.Watch(ctx, key, clientv3.WithRev(rev))
	watch:
		for {
			select {
			case <-ctx.Done():
				return
			case <-l.sess.Done():
				return
			case r, ok := <-wch:
				if !ok || r.Err() != nil {
					break watch
				}
				for _, ev := range r.Events {
					if ev.Type == clientv3.EventTypeDelete {
						return
					}
				}
				rev = r.Header.Revision + 1
				fails = 0
			}
		}
		// The watch broke (a compaction): see whether the key is there.
		r, err := c.Get(ctx, key)
		if err == nil {
			if len(r.Kvs) == 0 {
				return
			}
			rev = r.Header.Revision + 1
		}
		if !sleep(ctx, retryDelay(fails+1)) {
			return
		}
	}
}

// Leader returns the leading nimbus; ErrNotFound when there is none.
func (s *Store) Leader(ctx context.Context) (Nimbus, error) {
	r, err := s.c.Get(ctx, electionPrefix+"/", clientv3.WithFirstCreate()...)
	if err != nil {
		return Nimbus{}, fmt.Errorf("coord: leader: %w", err)
	}
	if len(r.Kvs) == 0 {
		return Nimbus{}, fmt.Errorf("%w: no nimbus leads", ErrNotFound)
	}
	id := string(r.Kvs[0].Value)
	var n Nimbus
	if err := s.get(ctx, membersPrefix+id, &n); err != nil {
		if errors.Is(err, ErrNotFound) {
			return Nimbus{ID: id}, nil
		}
		return Nimbus{}, err
	}
	return n, nil
}

// The leader's writes. Each is a transaction conditioned on the term's
// election key being the one this term created: a nimbus that has lost
// its lease but not yet noticed (its keep-alives late, its watch behind)
// cannot overwrite what the next leader wrote. Each fails with
// ErrNotLeader, writing nothing, once the term has ended in etcd.

// CreateTopology is Store.CreateTopology while the term holds.
func (l *Leadership) CreateTopology(ctx context.Context, t Topology) error {
	return l.s.createTopology(ctx, t, l.fence())
}

// UpdateTopology is Store.UpdateTopology while the term holds: it
// replaces the record only if it is still at revision t.Rev, and fails
// with ErrChanged otherwise, so that a check made on the record read
// still holds when it is written.
func (l *Leadership) UpdateTopology(ctx context.Context, t Topology) error {
	return l.s.writeTopology(ctx, TopologyWrite{ID: t.ID, Name: t.Name, Rev: t.Rev, Topology: &t}, l.fence())
}

// Write applies w while the term holds and its records are at the
// revisions it names; see TopologyWrite.
func (l *Leadership) Write(ctx context.Context, w TopologyWrite) error {
	return l.s.writeTopology(ctx, w, l.fence())
}

// PutAssignment stores a while the term holds.
func (l *Leadership) PutAssignment(ctx context.Context, a Assignment) error {
	return l.s.putAssignment(ctx, a, l.fence())
}

// DeleteAssignment removes a topology's assignment while the term holds.
func (l *Leadership) DeleteAssignment(ctx context.Context, id string) error {
	return l.s.deleteAssignment(ctx, id, l.fence())
}

// DeleteTopology is Store.DeleteTopology while the term holds.
func (l *Leadership) DeleteTopology(ctx context.Context, id string) error {
	return l.s.deleteTopology(ctx, id, l.fence())
}

func (l *Leadership) fence() *fence { return &fence{key: l.e.Key(), rev: l.e.Rev()} }

// fence is a leader's term as etcd holds it: its election key and the
// revision that created it.
type fence struct {
	key string
	rev int64
}

func (f *fence) cmp() clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(f.key), "=", f.rev)
}

func (f *fence) lost() error {
	return fmt.Errorf("%w: the election key %s of revision %d is gone", ErrNotLeader, f.key, f.rev)
}

// check reads the fence's key: ErrNotLeader if the term has ended.
func (f *fence) check(ctx context.Context, c *clientv3.Client) error {
	r, err := c.Get(ctx, f.key)
	if err != nil {
		return err
	}
	if len(r.Kvs) == 0 || r.Kvs[0].CreateRevision != f.rev {
		return f.lost()
	}
	return nil
}
