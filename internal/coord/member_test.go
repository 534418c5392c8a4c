package coord

import (
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gale-stream/gale/internal/testutil"
)

const testTTL = 2 * time.Second

// leaseOf returns the lease key is bound to, 0 if key is absent.
func leaseOf(t *testing.T, c *clientv3.Client, key string) clientv3.LeaseID {
	t.Helper()
	r, err := c.Get(testutil.Context(t), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Kvs) == 0 {
		return 0
	}
	return clientv3.LeaseID(r.Kvs[0].Lease)
}

func TestMembershipCloseAndStoreCloseRevoke(t *testing.T) {
	cl := newCluster(t)
	ctx := testutil.Context(t)
	a, err := cl.s.JoinSupervisor(ctx, Supervisor{ID: "s1", Host: "127.0.0.1", Ports: []int{6700}}, testTTL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.s.JoinSupervisor(ctx, Supervisor{ID: "s2", Host: "127.0.0.1", Ports: []int{6700}}, testTTL); err != nil {
		t.Fatal(err)
	}
	if sups, err := cl.s.Supervisors(ctx); err != nil || len(sups) != 2 || sups[0].ID != "s1" || sups[0].Ports[0] != 6700 {
		t.Fatalf("Supervisors: got %+v, %v; want s1 and s2", sups, err)
	}
	a.Close()
	a.Close()
	if l := leaseOf(t, cl.c, SupervisorsPrefix+"s1"); l != 0 {
		t.Error("s1 still there after its Close")
	}
	cl.s.Close() // closes s2's membership
	if l := leaseOf(t, cl.c, SupervisorsPrefix+"s2"); l != 0 {
		t.Error("s2 still there after Store.Close")
	}
	if _, err := cl.s.JoinSupervisor(ctx, Supervisor{ID: "s3"}, testTTL); !errors.Is(err, ErrClosed) {
		t.Errorf("join on a closed Store: got %v, want ErrClosed", err)
	}
}

// A membership cut off from etcd loses its key when the lease runs out,
// and puts it back, with its holds, when it can reach etcd again.
func TestMembershipExpiresWhenCutOffAndReturns(t *testing.T) {
	cl := newCluster(t)
	ctx := testutil.Context(t)
	p := newProxy(t, cl.e.Endpoints[0][len("http://"):])
	pc := dial(t, []string{p.addr})
	defer pc.Close()
	ps := NewStore(pc)
	defer ps.Close()

	m, err := ps.JoinNimbus(ctx, Nimbus{ID: "n1", Addr: "127.0.0.1:6627"}, testTTL)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Hold(ctx, "abc"); err != nil {
		t.Fatal(err)
	}
	key := membersPrefix + "n1"
	first := leaseOf(t, cl.c, key)
	if first == 0 {
		t.Fatal("no member key after JoinNimbus")
	}
	changes := cl.s.Changes(ctx, NimbusPrefix)
	<-changes

	p.cut()
	testutil.Eventually(t, 30*time.Second, "the member key expires", func() bool { return leaseOf(t, cl.c, key) == 0 })
	if h, _ := cl.s.Holders(ctx, "abc"); len(h) != 0 {
		t.Errorf("holders of an expired nimbus: got %v, want none", h)
	}
	p.heal()
	testutil.Eventually(t, 30*time.Second, "the member key is back", func() bool { return leaseOf(t, cl.c, key) != 0 })
	if l := leaseOf(t, cl.c, key); l == first {
		t.Errorf("member key back on the expired lease %x", l)
	}
	testutil.Eventually(t, 30*time.Second, "the hold is back", func() bool {
		h, err := cl.s.Holders(ctx, "abc")
		return err == nil && slices.Equal(h, []string{"n1"})
	})
	if !received(changes, 30*time.Second) {
		t.Error("Changes(NimbusPrefix) did not fire")
	}
}

// etcd down past the TTL: the client gives up on the lease; when etcd
// returns (its restart extends the old lease), the membership is on a new
// lease and the old one is revoked.
func TestMembershipReturnsAfterEtcdRestart(t *testing.T) {
	cl := newCluster(t)
	ctx := testutil.Context(t)
	m, err := cl.s.JoinSupervisor(ctx, Supervisor{ID: "s1"}, testTTL)
	if err != nil {
		t.Fatal(err)
	}
	key := SupervisorsPrefix + "s1"
	first := leaseOf(t, cl.c, key)
	changes := cl.s.Changes(ctx, SupervisorsPrefix)
	<-changes
	cl.restartEtcd(func() {
		testutil.Eventually(t, 30*time.Second, "the membership gives up on its lease", func() bool { return m.losses.Load() > 0 })
	})
	testutil.Eventually(t, 30*time.Second, "the member key is on a new lease", func() bool {
		l := leaseOf(t, cl.c, key)
		return l != 0 && l != first
	})
	// The old lease is revoked just after the new one takes.
	testutil.Eventually(t, 30*time.Second, "the old lease revoked", func() bool { return m.replaced.Load() > 0 })
	ttl, err := cl.c.TimeToLive(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	if ttl.TTL != -1 {
		t.Errorf("the old lease has TTL %d, want -1 (revoked)", ttl.TTL)
	}
	if !received(changes, 30*time.Second) {
		t.Error("Changes(SupervisorsPrefix) did not fire")
	}
}

// proxy forwards TCP connections to an address until cut, which drops
// them all and refuses new ones; heal listens again on the same port.
type proxy struct {
	t      *testing.T
	target string
	addr   string
	wg     sync.WaitGroup
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	p := &proxy{t: t, target: target, addr: "127.0.0.1:0"}
	p.heal()
	t.Cleanup(p.cut)
	return p
}

func (p *proxy) heal() {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			if p.ln != ln {
				p.mu.Unlock()
				c.Close()
				u.Close()
				return
			}
			p.conns = append(p.conns, c, u)
			p.wg.Add(2)
			go p.pipe(c, u)
			go p.pipe(u, c)
			p.mu.Unlock()
		}
	}()
}

func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
}

func (p *proxy) cut() {
	p.mu.Lock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}

// Holds lists every hold; a released hold is gone, and a new lease does
// not put it back.
func TestHoldsAndRelease(t *testing.T) {
	cl := newCluster(t)
	ctx := testutil.Context(t)
	a, err := cl.s.JoinNimbus(ctx, Nimbus{ID: "a"}, testTTL)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cl.s.JoinNimbus(ctx, Nimbus{ID: "b"}, testTTL)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []struct {
		m   *Membership
		sha string
	}{{a, "x"}, {a, "y"}, {b, "x"}} {
		if err := h.m.Hold(ctx, h.sha); err != nil {
			t.Fatal(err)
		}
	}
	holds, err := cl.s.Holds(ctx)
	if err != nil || len(holds) != 2 || !slices.Equal(holds["x"], []string{"a", "b"}) || !slices.Equal(holds["y"], []string{"a"}) {
		t.Fatalf("Holds: got %v, %v; want x: [a b], y: [a]", holds, err)
	}
	if err := a.Release(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if h, _ := cl.s.Holders(ctx, "x"); !slices.Equal(h, []string{"b"}) {
		t.Errorf("Holders of x after a released it: got %v, want [b]", h)
	}
	// A new lease puts back the holds kept, and not the released one.
	if err := a.establish(ctx); err != nil {
		t.Fatal(err)
	}
	if h, _ := cl.s.Holders(ctx, "x"); !slices.Equal(h, []string{"b"}) {
		t.Errorf("Holders of x after a's new lease: got %v, want [b]", h)
	}
	if h, _ := cl.s.Holders(ctx, "y"); !slices.Equal(h, []string{"a"}) {
		t.Errorf("Holders of y after a's new lease: got %v, want [a]", h)
	}
}
