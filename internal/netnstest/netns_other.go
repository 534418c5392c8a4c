//go:build !linux

package netnstest

import (
	"context"
	"errors"
	"os/exec"
	"runtime"
	"testing"
)

// Available reports why this process cannot build a Net: network
// namespaces are Linux's.
func Available() error {
	return errors.New("netnstest: network namespaces need Linux; this is " + runtime.GOOS)
}

// New skips the test, or fails it under CI, as Require does: there is
// no Net off Linux.
func New(t testing.TB) *Net {
	t.Helper()
	Require(t)
	t.Fatal("netnstest: unreachable: Available returned nil off Linux")
	return nil
}

// Host is never reached off Linux (New gives no Net).
func (n *Net) Host(name string) *Host {
	n.t.Fatal("netnstest: no hosts off Linux")
	return nil
}

// Command is never reached off Linux (New gives no Net).
func (h *Host) Command(ctx context.Context, prog string, args ...string) *exec.Cmd {
	h.net.t.Fatal("netnstest: no hosts off Linux")
	return nil
}

// Cut is never reached off Linux (New gives no Net).
func (h *Host) Cut() { h.net.t.Fatal("netnstest: no hosts off Linux") }

// Heal is never reached off Linux (New gives no Net).
func (h *Host) Heal() { h.net.t.Fatal("netnstest: no hosts off Linux") }

// CutFrom is never reached off Linux (New gives no Net).
func (h *Host) CutFrom(others ...*Host) { h.net.t.Fatal("netnstest: no hosts off Linux") }

// HealFrom is never reached off Linux (New gives no Net).
func (h *Host) HealFrom(others ...*Host) { h.net.t.Fatal("netnstest: no hosts off Linux") }
