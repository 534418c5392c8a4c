package netnstest

import (
	"os"
	"strconv"
	"sync"
	"testing"
)

// Require skips the test with the reason Available gives when network
// namespaces cannot be used here. When the environment variable CI is
// true it fails the test instead, so that a CI job missing root or
// iproute2 does not pass by skipping what it was meant to run.
func Require(t testing.TB) {
	t.Helper()
	err := Available()
	if err == nil {
		return
	}
	if mustRun(os.Getenv("CI")) {
		t.Fatalf("%v (CI is set: this test must run in CI; install iproute2 and run as root)", err)
	}
	t.Skip(err)
}

// mustRun says whether the value of the environment variable CI asks
// for tests that need namespaces to fail rather than skip.
func mustRun(ci string) bool {
	b, err := strconv.ParseBool(ci)
	return err == nil && b
}

// Net is one private /24 subnet whose main host is the test's own
// network namespace, at .1. Made by New. Its accessors (Addr, Hosts and
// those of Host) are safe for concurrent use; Host, and Host's Cut,
// Heal, CutFrom and HealFrom, stop the test with t.Fatal when ip fails,
// so call them from the goroutine of the test that made the Net.
type Net struct {
	t      testing.TB
	index  int    // the subnet is 10.(index>>8).(index&255).0/24
	owner  string // "gale-PID-START": names every namespace it makes
	sw     string // the switch's namespace
	uplink string // the main host's end of the link to the switch
	prefix string // "10.x.y."

	mu struct {
		sync.Mutex
		hosts []*Host
	}
}

// Host is one network namespace of a Net: a machine with one interface
// (eth0) at Addr, the loopback, and a default route through the main
// host. Made by Net.Host.
type Host struct {
	net  *Net
	name string // the caller's
	ns   string // ip netns name
	port string // its port on the switch, in the switch's namespace
	addr string
	mac  string
}

// Name returns the name the host was made with.
func (h *Host) Name() string { return h.name }

// Namespace returns the host's name for ip netns, for use by hand:
// ip netns exec NAME ss -tn.
func (h *Host) Namespace() string { return h.ns }

// Addr returns the host's IPv4 address, dotted.
func (h *Host) Addr() string { return h.addr }

// Addr returns the main host's IPv4 address on this Net (the subnet's
// .1), dotted: where processes of the test's own namespace listen to be
// reachable from the hosts.
func (n *Net) Addr() string { return n.prefix + "1" }

// Hosts returns the hosts made so far, in order.
func (n *Net) Hosts() []*Host {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]*Host(nil), n.mu.hosts...)
}
