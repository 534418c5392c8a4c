package coord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Membership is a key bound to a lease that its goroutine keeps alive.
// Keep-alives are not raft writes, so a steady membership costs etcd no
// writes. If the lease is lost (revoked, or etcd unreachable past the
// TTL), the goroutine grants a new one and puts the key again (with a
// nimbus's holds), retrying with backoff until etcd answers. Its methods
// are safe for concurrent use.
type Membership struct {
	s      *Store
	key    string
	val    string
	nimbus string // the nimbus id; "" for a supervisor
	ttl    int64  // seconds
	cancel context.CancelFunc
	done   chan struct{}
	// keepAlives counts keep-alive responses, losses the leases lost,
	// and replaced the old leases revoked after a new one took, for
	// tests.
	keepAlives, losses, replaced atomic.Int64
	// abandoned says the goroutine leaves the lease to expire instead of
	// revoking it.
	abandoned atomic.Bool
	mu        struct {
		sync.Mutex
		lease clientv3.LeaseID
		holds []string // sha256s
	}
}

// JoinSupervisor puts sup under SupervisorsPrefix, bound to a lease of
// ttl (whole seconds, rounded up), and keeps it alive until Close.
func (s *Store) JoinSupervisor(ctx context.Context, sup Supervisor, ttl time.Duration) (*Membership, error) {
	if sup.ID == "" {
		return nil, errors.New("coord: supervisor needs an id")
	}
	return s.join(ctx, SupervisorsPrefix+sup.ID, sup, "", ttl)
}

// JoinNimbus puts n under NimbusPrefix, bound to a lease of ttl (whole
// seconds, rounded up), and keeps it alive until Close. The membership
// can Hold artifacts and Campaign.
func (s *Store) JoinNimbus(ctx context.Context, n Nimbus, ttl time.Duration) (*Membership, error) {
	if n.ID == "" {
		return nil, errors.New("coord: nimbus needs an id")
	}
	return s.join(ctx, membersPrefix+n.ID, n, n.ID, ttl)
}

func (s *Store) join(ctx context.Context, key string, rec any, nimbus string, ttl time.Duration) (*Membership, error) {
	v, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("coord: %s: %w", key, err)
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("coord: %s: lease TTL must be > 0, got %v", key, ttl)
	}
	m := &Membership{s: s, key: key, val: string(v), nimbus: nimbus,
		ttl: int64(math.Ceil(ttl.Seconds())), done: make(chan struct{})}
	if err := m.establish(ctx); err != nil {
		return nil, err
	}
	mctx, cancel := context.WithCancel(s.ctx)
	m.cancel = cancel
	if !s.start(func() { m.run(mctx) }) {
		cancel()
		m.revoke(m.lease())
		return nil, ErrClosed
	}
	return m, nil
}

// Close revokes the lease, which deletes the key and the holds, and
// waits for the membership's goroutine. It is idempotent. Store.Close
// does the same for every membership still open.
func (m *Membership) Close() {
	m.cancel()
	<-m.done
}

// Abandon stops keeping the lease alive, without revoking it, and waits
// for the membership's goroutine: the key stays until the lease's TTL
// runs out, as when the process is killed. It is how a benchmark or a
// test plays a member's death without killing its process. Close after
// Abandon, and Abandon after Close, do nothing more.
func (m *Membership) Abandon() {
	m.abandoned.Store(true)
	m.cancel()
	<-m.done
}

// Hold records that this nimbus holds the artifact with checksum sha: a
// key under NimbusPrefix bound to its lease, put again with every new
// lease. An error says the put failed now; the hold is kept and put with
// the next lease.
func (m *Membership) Hold(ctx context.Context, sha string) error {
	if m.nimbus == "" {
		return errors.New("coord: Hold needs a nimbus membership")
	}
	k := holdsPrefix + m.nimbus + "/" + sha
	m.mu.Lock()
	if !slices.Contains(m.mu.holds, sha) {
		m.mu.holds = append(m.mu.holds, sha)
	}
	lease := m.mu.lease
	m.mu.Unlock()
	for {
		_, err := m.s.c.Put(ctx, k, "", clientv3.WithLease(lease))
		// A new lease granted meanwhile may have been put before this
		// put landed on the old one: put again on the new one.
		if cur := m.lease(); cur != lease {
			lease = cur
			continue
		}
		if err != nil {
			return fmt.Errorf("coord: hold %s: %w", sha, err)
		}
		return nil
	}
}

// Release records that this nimbus no longer holds the artifact with
// checksum sha: it deletes the hold, and the next lease does not put it
// again.
func (m *Membership) Release(ctx context.Context, sha string) error {
	if m.nimbus == "" {
		return errors.New("coord: Release needs a nimbus membership")
	}
	m.mu.Lock()
	m.mu.holds = slices.DeleteFunc(m.mu.holds, func(h string) bool { return h == sha })
	m.mu.Unlock()
	if _, err := m.s.c.Delete(ctx, holdsPrefix+m.nimbus+"/"+sha); err != nil {
		return fmt.Errorf("coord: release %s: %w", sha, err)
	}
	return nil
}

func (m *Membership) lease() clientv3.LeaseID {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.lease
}

// establish grants a lease and puts the key and the holds with it, in
// one transaction. The old lease, if any, is revoked after.
func (m *Membership) establish(ctx context.Context) error {
	g, err := m.s.c.Grant(ctx, m.ttl)
	if err != nil {
		return fmt.Errorf("coord: lease for %s: %w", m.key, err)
	}
	m.mu.Lock()
	old := m.mu.lease
	m.mu.lease = g.ID
	holds := slices.Clone(m.mu.holds)
	m.mu.Unlock()
	ops := []clientv3.Op{clientv3.OpPut(m.key, m.val, clientv3.WithLease(g.ID))}
	for _, sha := range holds {
		ops = append(ops, clientv3.OpPut(holdsPrefix+m.nimbus+"/"+sha, "", clientv3.WithLease(g.ID)))
	}
	if _, err := m.s.c.Txn(ctx).Then(ops...).Commit(); err != nil {
		// Keep the old lease to revoke once a new one takes.
		m.mu.Lock()
		if m.mu.lease == g.ID {
			m.mu.lease = old
		}
		m.mu.Unlock()
		m.revoke(g.ID)
		return fmt.Errorf("coord: put %s: %w", m.key, err)
	}
	if old != 0 {
		// It may outlive its keep-alives (etcd restarts extend leases),
		// holding an election key that blocks the next leader.
		m.revoke(old)
		m.replaced.Add(1)
	}
	return nil
}

// revoke revokes lease, best effort, within a second.
func (m *Membership) revoke(lease clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _ = m.s.c.Revoke(ctx, lease)
}

// run keeps the lease alive, and establishes a new one when it is lost,
// until ctx is done; then it revokes the lease.
func (m *Membership) run(ctx context.Context) {
	defer close(m.done)
	defer func() {
		if !m.abandoned.Load() {
			m.revoke(m.lease())
		}
	}()
	for {
		// The client closes the channel when the lease is gone, when no
		// response came within the TTL, or when ctx is done.
		if ka, err := m.s.c.KeepAlive(ctx, m.lease()); err == nil {
			for range ka {
				m.keepAlives.Add(1)
			}
		}
		m.losses.Add(1)
		for fails := 0; ; fails++ {
			if !sleep(ctx, retryDelay(fails)) {
				return
			}
			actx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := m.establish(actx)
			cancel()
			if err == nil {
				break
			}
		}
	}
}
