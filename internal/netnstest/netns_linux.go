//go:build linux

package netnstest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// netnsDir is where ip netns keeps its named namespaces.
const netnsDir = "/run/netns"

// settle bounds how long cleanup waits for killed processes to leave a
// namespace, and Heal for a link to come back up. Generous: only a
// broken machine takes it.
const settle = 60 * time.Second

var (
	avail struct {
		once sync.Once
		ip   string // path of the ip command
		err  error
	}
	sweep struct {
		once sync.Once
		err  error
	}
	// subnets counts the subnets this process has tried, so that each
	// New picks another.
	subnets atomic.Int64
)

// Available reports whether this process can build a Net: it must be
// root on Linux with the ip command of iproute2, and ip must be able to
// make a namespace, run a program in it and make a veth pair and a
// bridge there (it tries once per process). The error says what is
// missing.
func Available() error {
	avail.once.Do(func() { avail.ip, avail.err = probe() })
	return avail.err
}

func probe() (string, error) {
	if uid := os.Geteuid(); uid != 0 {
		return "", fmt.Errorf("netnstest: network namespaces need root; running as uid %d", uid)
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		for _, p := range []string{"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"} {
			if _, serr := os.Stat(p); serr == nil {
				ip, err = p, nil
				break
			}
		}
	}
	if err != nil {
		return "", errors.New("netnstest: the ip command is missing; install iproute2 (apt-get install -y iproute2)")
	}
	owner, err := ownerTag()
	if err != nil {
		return "", err
	}
	ns := owner + "-probe"
	if err := runIP(ip, "netns", "add", ns); err != nil {
		return "", fmt.Errorf("netnstest: cannot make a network namespace: %w", err)
	}
	defer runIP(ip, "netns", "del", ns)
	if err := runIP(ip, "netns", "exec", ns, ip, "link", "set", "dev", "lo", "up"); err != nil {
		return "", fmt.Errorf("netnstest: cannot run a program in a network namespace: %w", err)
	}
	if err := runIP(ip, "-n", ns, "link", "add", "name", "p0", "type", "veth", "peer", "name", "p1"); err != nil {
		return "", fmt.Errorf("netnstest: cannot make a veth pair (kernel without CONFIG_VETH?): %w", err)
	}
	if err := runIP(ip, "-n", ns, "link", "add", "name", "sw0", "type", "bridge"); err != nil {
		return "", fmt.Errorf("netnstest: cannot make a bridge (kernel without CONFIG_BRIDGE?): %w", err)
	}
	return ip, nil
}

// runIP runs the ip command with args; the error carries its output.
func runIP(ip string, args ...string) error {
	out, err := exec.Command(ip, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// batchIP runs ip's commands, one a line, in namespace ns ("" for the
// main host's).
func batchIP(ns string, lines ...string) error {
	args := []string{"-batch", "-"}
	if ns != "" {
		args = append([]string{"-n", ns}, args...)
	}
	cmd := exec.Command(avail.ip, args...)
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s with %q: %w: %s", strings.Join(args, " "), lines, err, bytes.TrimSpace(out))
	}
	return nil
}

// ownerTag names this process in the names of what it makes:
// "gale-PID-START", START being its start time in clock ticks since
// boot, so that a pid reused by another process is not taken for the
// owner.
func ownerTag() (string, error) {
	pid := os.Getpid()
	start, _, err := procStart(pid)
	if err != nil {
		return "", fmt.Errorf("netnstest: read this process's start time: %w", err)
	}
	return fmt.Sprintf("gale-%d-%d", pid, start), nil
}

// procStart returns a process's start time (field 22 of
// /proc/PID/stat) and state (field 3).
func procStart(pid int) (start uint64, state byte, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The command (field 2) is in parentheses and may hold anything.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: no ')' in %q", pid, b)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %d fields after the command, want ≥ 20", pid, len(f))
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("/proc/%d/stat: start time: %w", pid, err)
	}
	return start, f[0][0], nil
}

// parseOwner reads the owner out of a namespace name this package
// made: "gale-PID-START-...". ok is false for any other name.
func parseOwner(name string) (pid int, start uint64, ok bool) {
	rest, found := strings.CutPrefix(name, "gale-")
	if !found {
		return 0, 0, false
	}
	f := strings.SplitN(rest, "-", 3)
	if len(f) < 3 {
		return 0, 0, false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return 0, 0, false
	}
	start, err = strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return pid, start, true
}

// ownerAlive reports whether the process that made a namespace still
// runs: same pid, same start time, not a zombie.
func ownerAlive(pid int, start uint64) bool {
	s, state, err := procStart(pid)
	return err == nil && s == start && state != 'Z' && state != 'X'
}

// sweepStale removes the namespaces of this package whose owner process
// has ended (a test binary that crashed or was killed before its
// cleanup), killing what still runs in them. The veth pairs go with
// their namespaces. Namespaces of live owners, and every name this
// package does not make, are left alone.
func sweepStale() error {
	ents, err := os.ReadDir(netnsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("netnstest: list stale namespaces: %w", err)
	}
	var errs []error
	for _, e := range ents {
		pid, start, ok := parseOwner(e.Name())
		if !ok || ownerAlive(pid, start) {
			continue
		}
		if err := destroyNamespace(e.Name()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// namespacePids returns the pids of the processes in namespace ns.
func namespacePids(ns string) ([]int, error) {
	out, err := exec.Command(avail.ip, "netns", "pids", ns).Output()
	if err != nil {
		return nil, fmt.Errorf("ip netns pids %s: %w", ns, err)
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("ip netns pids %s: %q is not a pid", ns, f)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// destroyNamespace kills every process in namespace ns (SIGKILL, until
// none is left) and deletes it. A namespace that does not exist is no
// error.
func destroyNamespace(ns string) error {
	if !namespaceExists(ns) {
		return nil
	}
	err := killAndDelete(ns)
	if err != nil && !namespaceExists(ns) {
		return nil // another test binary's sweep took it first
	}
	return err
}

func namespaceExists(ns string) bool {
	_, err := os.Stat(netnsDir + "/" + ns)
	return !errors.Is(err, os.ErrNotExist)
}

// killAndDelete is destroyNamespace's work, for a namespace that
// existed a moment ago.
func killAndDelete(ns string) error {
	deadline := time.Now().Add(settle)
	for {
		pids, err := namespacePids(ns)
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("netnstest: processes %v still run in namespace %s after SIGKILL", pids, ns)
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(10 * time.Millisecond) // poll: the kernel takes them down asynchronously
	}
	if err := runIP(avail.ip, "netns", "del", ns); err != nil {
		return fmt.Errorf("netnstest: %w", err)
	}
	return nil
}

// nextSubnet returns the index of a subnet to try: 10.128.0.0/24 to
// 10.255.255.0/24, spread by pid so that concurrent test binaries
// mostly try different ones first.
func nextSubnet() int {
	return 0x8000 | ((os.Getpid()*16 + int(subnets.Add(1))) & 0x7fff)
}

func subnetPrefix(index int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(index >> 8), byte(index), 0}), 24)
}

// subnetUsed reports whether the subnet overlaps an address of the main
// host's interfaces or one of its IPv4 routes other than the default.
func subnetUsed(p netip.Prefix) (bool, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false, fmt.Errorf("netnstest: list the host's addresses: %w", err)
	}
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		q, err := netip.ParsePrefix(ipn.String())
		if err == nil && q.Addr().Is4() && q.Overlaps(p) {
			return true, nil
		}
	}
	b, err := os.ReadFile("/proc/net/route")
	if err != nil {
		return false, fmt.Errorf("netnstest: read the host's routes: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		dst, err1 := strconv.ParseUint(f[1], 16, 32)
		mask, err2 := strconv.ParseUint(f[7], 16, 32)
		if err1 != nil || err2 != nil || mask == 0 {
			continue
		}
		// Little-endian, as the kernel prints them.
		d := netip.AddrFrom4([4]byte{byte(dst), byte(dst >> 8), byte(dst >> 16), byte(dst >> 24)})
		bits := 0
		for m := uint32(mask); m != 0; m &= m - 1 {
			bits++
		}
		if netip.PrefixFrom(d, bits).Masked().Overlaps(p) {
			return true, nil
		}
	}
	return false, nil
}

func mac(index, host int) string {
	return fmt.Sprintf("02:67:61:%02x:%02x:%02x", byte(index>>8), byte(index), byte(host))
}

// New makes a Net for the test: a /24 subnet of 10.128.0.0/9 that no
// interface or route of this machine uses, the main host (the test's
// own namespace) at .1 on an interface named "galeXXXX", and a switch
// in a namespace of its own. It skips the test, or fails it, as Require
// does when namespaces cannot be used. t.Cleanup removes it all.
func New(t testing.TB) *Net {
	t.Helper()
	Require(t)
	sweep.once.Do(func() { sweep.err = sweepStale() })
	if sweep.err != nil {
		t.Logf("netnstest: removing what crashed test binaries left: %v", sweep.err)
	}
	owner, err := ownerTag()
	if err != nil {
		t.Fatal(err)
	}
	n := &Net{t: t, owner: owner}
	for try := 0; ; try++ {
		if try == 64 {
			t.Fatalf("netnstest: found no free subnet in 10.128.0.0/9 in %d tries", try)
		}
		index := nextSubnet()
		p := subnetPrefix(index)
		used, err := subnetUsed(p)
		if err != nil {
			t.Fatal(err)
		}
		if used {
			continue
		}
		n.index = index
		n.prefix = strings.TrimSuffix(p.Addr().String(), "0")
		n.sw = fmt.Sprintf("%s-%04x-switch", owner, index)
		n.uplink = fmt.Sprintf("gale%04x", index)
		if err := runIP(avail.ip, "netns", "add", n.sw); err != nil {
			t.Fatalf("netnstest: %v", err)
		}
		// The main host's interface name is the claim on the subnet
		// among test binaries: making it fails if another has it.
		err = runIP(avail.ip, "link", "add", "name", n.uplink, "address", mac(index, 1),
			"type", "veth", "peer", "name", "uplink", "netns", n.sw)
		if err == nil {
			break
		}
		if derr := destroyNamespace(n.sw); derr != nil {
			t.Errorf("netnstest: %v", derr)
		}
		if !strings.Contains(err.Error(), "File exists") {
			t.Fatalf("netnstest: %v", err)
		}
	}
	t.Cleanup(n.close)
	if err := batchIP(n.sw,
		"link add name sw0 type bridge",
		"link set dev sw0 up",
		"link set dev uplink master sw0",
		"link set dev uplink up",
	); err != nil {
		t.Fatalf("netnstest: make the switch: %v", err)
	}
	if err := batchIP("",
		fmt.Sprintf("addr add %s/24 dev %s", n.Addr(), n.uplink),
		fmt.Sprintf("link set dev %s up", n.uplink),
	); err != nil {
		t.Fatalf("netnstest: give the main host %s: %v", n.Addr(), err)
	}
	return n
}

// close removes the main host's interface and the switch. The hosts
// have their own cleanups, which run first.
func (n *Net) close() {
	if _, err := os.Stat("/sys/class/net/" + n.uplink); err == nil {
		if err := runIP(avail.ip, "link", "del", "dev", n.uplink); err != nil {
			n.t.Errorf("netnstest: %v", err)
		}
	}
	if err := destroyNamespace(n.sw); err != nil {
		n.t.Errorf("netnstest: %v", err)
	}
}

var hostName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,32}$`)

// Host makes a host on the Net: a namespace with its loopback up, eth0
// at the next address (.2 for the first), a default route through the
// main host, and a port on the switch. Name is the caller's, for logs
// and for the namespace's name (1 to 32 letters, digits, '.', '_' or
// '-', unique in the Net). t.Cleanup kills whatever still runs in the
// namespace, processes that left the process group of Command included,
// and removes it.
func (n *Net) Host(name string) *Host {
	t := n.t
	t.Helper()
	if !hostName.MatchString(name) {
		t.Fatalf("netnstest: host name %q: use 1 to 32 letters, digits, '.', '_' or '-'", name)
	}
	others := n.Hosts()
	for _, o := range others {
		if o.name == name {
			t.Fatalf("netnstest: host name %q is taken in this Net; give each host its own", name)
		}
	}
	k := len(others) + 2
	if k > 254 {
		t.Fatalf("netnstest: a Net has room for 253 hosts; make another Net")
	}
	h := &Host{
		net:  n,
		name: name,
		ns:   fmt.Sprintf("%s-%04x-%d-%s", n.owner, n.index, k, name),
		port: fmt.Sprintf("h%d", k),
		addr: n.prefix + strconv.Itoa(k),
		mac:  mac(n.index, k),
	}
	if err := runIP(avail.ip, "netns", "add", h.ns); err != nil {
		t.Fatalf("netnstest: %v", err)
	}
	t.Cleanup(h.close)
	if err := runIP(avail.ip, "-n", n.sw, "link", "add", "name", h.port, "type", "veth",
		"peer", "name", "eth0", "netns", h.ns, "address", h.mac); err != nil {
		t.Fatalf("netnstest: %v", err)
	}
	if err := batchIP(n.sw,
		fmt.Sprintf("link set dev %s master sw0", h.port),
		fmt.Sprintf("link set dev %s up", h.port),
	); err != nil {
		t.Fatalf("netnstest: plug host %s into the switch: %v", name, err)
	}
	// Permanent neighbour entries: nobody asks who has an address, so
	// that during a cut a packet just vanishes, and neither side learns
	// from a failed ARP that the other is unreachable.
	lines := []string{
		"link set dev lo up",
		fmt.Sprintf("addr add %s/24 dev eth0", h.addr),
		"link set dev eth0 up",
		fmt.Sprintf("route add default via %s", n.Addr()),
		fmt.Sprintf("neigh replace %s lladdr %s dev eth0 nud permanent", n.Addr(), mac(n.index, 1)),
	}
	for _, o := range others {
		lines = append(lines, fmt.Sprintf("neigh replace %s lladdr %s dev eth0 nud permanent", o.addr, o.mac))
	}
	if err := batchIP(h.ns, lines...); err != nil {
		t.Fatalf("netnstest: set up host %s: %v", name, err)
	}
	for _, o := range others {
		if err := batchIP(o.ns, fmt.Sprintf("neigh replace %s lladdr %s dev eth0 nud permanent", h.addr, h.mac)); err != nil {
			t.Fatalf("netnstest: tell host %s of host %s: %v", o.name, name, err)
		}
	}
	if err := batchIP("", fmt.Sprintf("neigh replace %s lladdr %s dev %s nud permanent", h.addr, h.mac, n.uplink)); err != nil {
		t.Fatalf("netnstest: tell the main host of host %s: %v", name, err)
	}
	n.mu.Lock()
	n.mu.hosts = append(n.mu.hosts, h)
	n.mu.Unlock()
	return h
}

// close kills what runs in the host's namespace and removes the
// namespace and its veth pair.
func (h *Host) close() {
	t := h.net.t
	// Deleting the switch's end first removes the pair now, not
	// whenever the kernel gets round to the dead namespace.
	if err := runIP(avail.ip, "-n", h.net.sw, "link", "show", "dev", h.port); err == nil {
		if err := runIP(avail.ip, "-n", h.net.sw, "link", "del", "dev", h.port); err != nil {
			t.Errorf("netnstest: host %s: %v", h.name, err)
		}
	}
	if err := destroyNamespace(h.ns); err != nil {
		t.Errorf("netnstest: host %s: %v", h.name, err)
	}
}

// Command returns a command that runs prog with args inside the host's
// namespace (through ip netns exec, which execs prog: the command's pid
// is prog's). prog is looked up in PATH unless it holds a slash. The
// process leads a process group of its own, so that
// syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) kills it and its
// children, and when ctx is done that is what happens. Callers may
// replace SysProcAttr and Cancel (a supervisor's setsid, say); the
// host's cleanup kills whatever is left in the namespace anyway.
func (h *Host) Command(ctx context.Context, prog string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, avail.ip, append([]string{"netns", "exec", h.ns, prog}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return cmd
}

// Cut partitions the host from the network: from the main host and
// from every other host, both ways, while processes everywhere keep
// running. It takes the host's port on the switch down, so eth0 loses
// its carrier but keeps its address and routes.
//
// What each side sees is what a real partition shows, not a refusal:
// no packet crosses and none comes back, no RST, no ICMP, no failed
// ARP (neighbours are static). Established TCP connections stall:
// writes succeed until the send buffer is full and then block, reads
// block, until the application's deadline, TCP keepalive or the
// retransmission timeout gives up; after Heal, a connection that has
// not given up carries on, data written during the cut included. A new
// connect, either way, gets no answer and fails only when its timeout
// runs out. Loopback and the host's own address keep working inside
// the host. Cutting a host already cut does nothing.
func (h *Host) Cut() {
	t := h.net.t
	t.Helper()
	if err := runIP(avail.ip, "-n", h.net.sw, "link", "set", "dev", h.port, "down"); err != nil {
		t.Fatalf("netnstest: cut host %s: %v", h.name, err)
	}
}

// Heal undoes Cut: it brings the host's port on the switch up and
// waits until both ends of the link are up. TCP resends what it holds
// at its next retransmission, so a stalled connection may take a few
// seconds more to move; poll for what you expect. Healing a host not
// cut does nothing.
func (h *Host) Heal() {
	t := h.net.t
	t.Helper()
	if err := runIP(avail.ip, "-n", h.net.sw, "link", "set", "dev", h.port, "up"); err != nil {
		t.Fatalf("netnstest: heal host %s: %v", h.name, err)
	}
	deadline := time.Now().Add(settle)
	for {
		sw, err1 := exec.Command(avail.ip, "-n", h.net.sw, "-d", "link", "show", "dev", h.port).Output()
		in, err2 := exec.Command(avail.ip, "-n", h.ns, "link", "show", "dev", "eth0").Output()
		if err1 == nil && err2 == nil && bytes.Contains(sw, []byte("state forwarding")) &&
			bytes.Contains(in, []byte("state UP")) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("netnstest: heal host %s: the link is not up after %v:\n%s\n%s", h.name, settle, sw, in)
		}
		time.Sleep(10 * time.Millisecond) // poll: links come up asynchronously
	}
}

// nowhere is a MAC address no host of a Net has (they count from .1):
// frames to it reach the switch, which floods them, and every host
// drops them as not its own.
func (n *Net) nowhere() string { return mac(n.index, 0) }

// CutFrom partitions the host from the hosts given and only from them,
// both ways: packets between the host and each of them vanish as with
// Cut (no reset, no ICMP, no failed ARP), while the host's links to the
// main host and to every other host stay up. It points each side's
// static neighbour entry for the other at a MAC address that nobody
// has. It is how a machine loses some peers and keeps others: a
// supervisor cut off from etcd and nimbus whose workers still reach the
// other workers. Cutting a pair already cut does nothing; Heal does not
// undo CutFrom (HealFrom does), nor CutFrom Cut.
func (h *Host) CutFrom(others ...*Host) {
	t := h.net.t
	t.Helper()
	for _, o := range others {
		if err := h.pointAt(o, h.net.nowhere(), h.net.nowhere()); err != nil {
			t.Fatalf("netnstest: cut host %s from host %s: %v", h.name, o.name, err)
		}
	}
}

// HealFrom undoes CutFrom for the hosts given: packets flow again
// between the host and each of them, and a stalled connection carries on
// at TCP's next retransmission. Healing a pair not cut does nothing.
func (h *Host) HealFrom(others ...*Host) {
	t := h.net.t
	t.Helper()
	for _, o := range others {
		if err := h.pointAt(o, o.mac, h.mac); err != nil {
			t.Fatalf("netnstest: heal host %s from host %s: %v", h.name, o.name, err)
		}
	}
}

// pointAt sets h's neighbour entry for o to toO and o's for h to toH.
func (h *Host) pointAt(o *Host, toO, toH string) error {
	if o == h || o.net != h.net {
		return fmt.Errorf("host %s is not another host of this Net", o.name)
	}
	if err := batchIP(h.ns, fmt.Sprintf("neigh replace %s lladdr %s dev eth0 nud permanent", o.addr, toO)); err != nil {
		return err
	}
	return batchIP(o.ns, fmt.Sprintf("neigh replace %s lladdr %s dev eth0 nud permanent", h.addr, toH))
}
