// Package netnstest builds small networks of "hosts" on this machine out
// of Linux network namespaces and veth pairs, so that an end-to-end test
// can put a supervisor and its workers on a host of their own and cut
// that host off from everything else while every process keeps running.
// Import it only from tests.
//
// A Net is one private /24 subnet. The test's own (root) network
// namespace is the main host, at the subnet's .1 address: a process
// there that listens on that address, or on 0.0.0.0, is reachable from
// every host of the Net. Each Host is a namespace of its own, at .2, .3,
// and so on, joined to the main host and to the other hosts through one
// switch (a bridge in a namespace of the Net's own). Nothing listening
// only on 127.0.0.1 is reachable from another host, as on real machines.
// A host is a network, not a machine: files, unix sockets on the
// filesystem and process ids are shared with the rest of this machine,
// so a supervisor's local control socket works as it would on its own
// machine, and a cut does not touch it.
//
//	n := netnstest.New(t)           // skips, or fails under CI=true, without root and ip netns
//	h := n.Host("sup1")
//	cmd := h.Command(ctx, bin, "supervisor", "--host", h.Addr(), "--etcd", "http://"+n.Addr()+":2379")
//	...
//	h.Cut()                          // a network partition: packets vanish both ways
//	h.Heal()
//	h.CutFrom(ctl)                   // a partial one: h loses ctl, keeps the others
//	h.HealFrom(ctl)
//
// What the caller must do: call New, Host, Cut, Heal, CutFrom and
// HealFrom from the test's goroutine (they stop the test with t.Fatal
// when ip fails). Everything New and Host create is removed by
// t.Cleanup, processes still running in a host's namespace included,
// even when the test fails halfway; state a crashed test binary left
// behind is removed by the next New in any later test binary, and never
// while its owner is alive.
//
// It needs root, Linux and the ip command of iproute2; Available says
// what is missing, and Require skips a test that needs it (or fails it
// when the environment variable CI is true, so that a CI machine that
// lacks them shows).
package netnstest
