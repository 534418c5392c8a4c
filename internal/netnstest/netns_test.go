//go:build linux

package netnstest_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gale-stream/gale/internal/netnstest"
)

// dialShort is the connect timeout of the attempts that must fail.
const dialShort = "500"

// TestCutStallsConnectionsAndHealResumesThem: a client in a host and a
// server on the main host exchange data; while the host is cut, an
// established connection stalls (no reset) and a new connect times out,
// both ways; after Heal the stalled connection delivers what was
// written during the cut and new connections work.
func TestCutStallsConnectionsAndHealResumesThem(t *testing.T) {
	n := netnstest.New(t)
	h := n.Host("a")
	srv := startEcho(t, net.JoinHostPort(n.Addr(), "0"))
	a := startAgent(t, h)

	// Host → main host.
	a.eventually("dial c1 " + srv + " 2000")
	a.want("echo c1 before 60000", "ok before")
	// Main host → host.
	hostSrv := strings.TrimPrefix(a.want("listen "+net.JoinHostPort(h.Addr(), "0"), "ok "), "ok ")
	c := dialEventually(t, hostSrv)
	if got := echo(t, c, "before", generous); got != "before" {
		t.Fatalf("main host → host: echo got %q, want %q", got, "before")
	}

	h.Cut()
	a.want("echo c1 during 300", "err timeout")
	a.want("dial c2 "+srv+" "+dialShort, "err timeout")
	if _, err := net.DialTimeout("tcp", hostSrv, 500*time.Millisecond); class(err) != "timeout" {
		t.Fatalf("main host → cut host: dial got %v, want a timeout", err)
	}
	c.c.SetDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := io.WriteString(c.c, "during\n"); err != nil {
		t.Fatalf("main host → cut host: a write that fits the send buffer failed: %v", err)
	}
	if s, err := c.r.ReadString('\n'); class(err) != "timeout" {
		t.Fatalf("main host → cut host: read got %q, %v; want a timeout", s, err)
	}

	h.Heal()
	// The connections of before the cut were stalled, not broken.
	a.want("read c1 60000", "ok during")
	c.c.SetDeadline(time.Now().Add(generous))
	if s, err := c.r.ReadString('\n'); err != nil || s != "during\n" {
		t.Fatalf("main host → healed host: read got %q, %v; want the echo of what was written during the cut", s, err)
	}
	a.eventually("dial c3 " + srv + " 2000")
	a.want("echo c3 after 60000", "ok after")
	if got := echo(t, dialEventually(t, hostSrv), "after", generous); got != "after" {
		t.Fatalf("main host → healed host: echo got %q, want %q", got, "after")
	}
}

// TestHostsReachEachOtherOnlyWhileNeitherIsCut: two hosts talk through
// the Net; cutting either stops it while the other still reaches the
// main host, and the cut host still reaches itself.
func TestHostsReachEachOtherOnlyWhileNeitherIsCut(t *testing.T) {
	n := netnstest.New(t)
	ha, hb := n.Host("a"), n.Host("b")
	if ha.Addr() == hb.Addr() || ha.Addr() == n.Addr() || hb.Addr() == n.Addr() {
		t.Fatalf("addresses: main %s, a %s, b %s; want three different", n.Addr(), ha.Addr(), hb.Addr())
	}
	srv := startEcho(t, net.JoinHostPort(n.Addr(), "0"))
	a, b := startAgent(t, ha), startAgent(t, hb)
	aSrv := strings.TrimPrefix(a.want("listen "+net.JoinHostPort(ha.Addr(), "0"), "ok "), "ok ")

	b.eventually("dial x " + aSrv + " 2000")
	b.want("echo x hello 60000", "ok hello")

	ha.Cut()
	b.want("dial y "+aSrv+" "+dialShort, "err timeout")
	b.want("echo x stalled 300", "err timeout")
	b.eventually("dial m " + srv + " 2000") // b's own link is untouched
	b.want("echo m main 60000", "ok main")
	a.eventually("dial self " + aSrv + " 2000") // a still reaches itself
	a.want("echo self self 60000", "ok self")
	a.want("dial m "+srv+" "+dialShort, "err timeout")

	ha.Heal()
	b.want("read x 60000", "ok stalled")
	b.eventually("dial y " + aSrv + " 2000")
	b.want("echo y again 60000", "ok again")

	hb.Cut()
	b.want("dial z "+aSrv+" "+dialShort, "err timeout")
	a.eventually("dial m " + srv + " 2000")
	hb.Heal()
	b.eventually("dial z " + aSrv + " 2000")
	b.want("echo z last 60000", "ok last")
}

// TestCutFromPartitionsOnlyThePairsGiven: a host cut from one other host
// loses that one, both ways and silently (an established connection
// stalls, a new connect times out), and keeps the rest: the third host
// and the main host. HealFrom brings the pair back, the stalled
// connection with it.
func TestCutFromPartitionsOnlyThePairsGiven(t *testing.T) {
	n := netnstest.New(t)
	ha, hb, hc := n.Host("a"), n.Host("b"), n.Host("c")
	srv := startEcho(t, net.JoinHostPort(n.Addr(), "0"))
	a, b, c := startAgent(t, ha), startAgent(t, hb), startAgent(t, hc)
	aSrv := strings.TrimPrefix(a.want("listen "+net.JoinHostPort(ha.Addr(), "0"), "ok "), "ok ")
	bSrv := strings.TrimPrefix(b.want("listen "+net.JoinHostPort(hb.Addr(), "0"), "ok "), "ok ")
	b.eventually("dial x " + aSrv + " 2000")
	b.want("echo x before 60000", "ok before")

	ha.CutFrom(hb)
	b.want("echo x stalled 300", "err timeout")
	b.want("dial y "+aSrv+" "+dialShort, "err timeout")
	a.want("dial y "+bSrv+" "+dialShort, "err timeout")
	c.eventually("dial z " + aSrv + " 2000") // a keeps c
	c.want("echo z kept 60000", "ok kept")
	a.eventually("dial m " + srv + " 2000") // and the main host
	a.want("echo m main 60000", "ok main")
	c.eventually("dial w " + bSrv + " 2000") // and b keeps c
	c.want("echo w kept 60000", "ok kept")

	ha.HealFrom(hb)
	b.want("read x 60000", "ok stalled")
	b.eventually("dial y " + aSrv + " 2000")
	b.want("echo y after 60000", "ok after")
	a.eventually("dial v " + bSrv + " 2000")
	a.want("echo v after 60000", "ok after")
}

// TestCleanupRemovesEverything: when the test that made a Net ends,
// its namespaces and the main host's address are gone, and so is every
// process started in a host, including one that left the process group
// for a session of its own.
func TestCleanupRemovesEverything(t *testing.T) {
	netnstest.Require(t)
	before := namespaces(t)
	var (
		made      []string
		mainAddr  string
		cmd       *exec.Cmd
		grandkids []int
	)
	t.Run("net", func(t *testing.T) {
		n := netnstest.New(t)
		h1, h2 := n.Host("x"), n.Host("y")
		made = []string{h1.Namespace(), h2.Namespace()}
		mainAddr = n.Addr()
		now := namespaces(t)
		for _, ns := range made {
			if !slices.Contains(now, ns) {
				t.Fatalf("namespace %s of a host is not in ip netns list: %v", ns, now)
			}
		}
		if !hasAddr(t, mainAddr) {
			t.Fatalf("the main host has no interface with %s", mainAddr)
		}
		// Not stopped by the test: the cleanup must.
		a := newAgent(t, h1, context.Background())
		cmd = a.cmd
		for _, mode := range []string{"group", "session"} {
			pid, err := strconv.Atoi(strings.TrimPrefix(a.want("spawn "+mode, "ok "), "ok "))
			if err != nil {
				t.Fatal(err)
			}
			grandkids = append(grandkids, pid)
		}
	})
	after := namespaces(t)
	for _, ns := range made {
		if slices.Contains(after, ns) {
			t.Errorf("namespace %s is left after the cleanup", ns)
		}
	}
	for _, ns := range after {
		if !slices.Contains(before, ns) && strings.HasPrefix(ns, fmt.Sprintf("gale-%d-", os.Getpid())) {
			t.Errorf("namespace %s of this process is left after the cleanup", ns)
		}
	}
	if hasAddr(t, mainAddr) {
		t.Errorf("the main host still has %s after the cleanup", mainAddr)
	}
	if err := waitFor(cmd); err == nil || strings.Contains(err.Error(), "did not end") {
		t.Errorf("the process started with Command: got %v, want it killed by the cleanup", err)
	}
	for _, pid := range grandkids {
		waitGone(t, pid)
	}
}

// TestCommandRunsInTheHostAndCancelKillsItsGroup: Command's process
// runs in the host's namespace, and cancelling its context kills it and
// the children in its process group.
func TestCommandRunsInTheHostAndCancelKillsItsGroup(t *testing.T) {
	n := netnstest.New(t)
	h := n.Host("a")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := newAgent(t, h, ctx)
	pid, err := strconv.Atoi(strings.TrimPrefix(a.want("spawn group", "ok "), "ok "))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []int{a.cmd.Process.Pid, pid} {
		out, err := exec.Command("ip", "netns", "identify", strconv.Itoa(p)).Output()
		if got := strings.TrimSpace(string(out)); err != nil || got != h.Namespace() {
			t.Fatalf("process %d is in namespace %q (%v), want %q", p, got, err, h.Namespace())
		}
	}
	cancel()
	if err := waitFor(a.cmd); err == nil || strings.Contains(err.Error(), "did not end") {
		t.Fatalf("after cancel: got %v, want the process killed", err)
	}
	waitGone(t, pid)
}

type clientConn struct {
	c net.Conn
	r *bufio.Reader
}

// dialEventually connects from the main host, retrying within the
// generous bound.
func dialEventually(t *testing.T, addr string) *clientConn {
	t.Helper()
	deadline := time.Now().Add(generous)
	for {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err == nil {
			t.Cleanup(func() { c.Close() })
			return &clientConn{c: c, r: bufio.NewReader(c)}
		}
		if time.Now().After(deadline) {
			t.Fatalf("dial %s: still %v after %v", addr, err, generous)
		}
		time.Sleep(50 * time.Millisecond) // poll: a refusal comes back at once
	}
}

// echo writes s on c and returns the line read back within d.
func echo(t *testing.T, c *clientConn, s string, d time.Duration) string {
	t.Helper()
	c.c.SetDeadline(time.Now().Add(d))
	if _, err := io.WriteString(c.c, s+"\n"); err != nil {
		t.Fatalf("write: %v", err)
	}
	got, err := c.r.ReadString('\n')
	if err != nil {
		t.Fatalf("read the echo of %q: %v", s, err)
	}
	return strings.TrimSuffix(got, "\n")
}

// namespaces returns what ip netns list lists.
func namespaces(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatalf("ip netns list: %v", err)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	return names
}

// hasAddr reports whether an interface of the main host has addr.
func hasAddr(t *testing.T, addr string) bool {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.String() == addr {
			return true
		}
	}
	return false
}

// waitGone waits, within the generous bound, until process pid has
// ended: gone, or a zombie nobody reaps (this machine's init may not).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(generous)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 && strings.HasPrefix(string(b[i+1:]), " Z") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs after %v: %s", pid, generous, b)
		}
		time.Sleep(10 * time.Millisecond) // poll: SIGKILL takes effect asynchronously
	}
}
