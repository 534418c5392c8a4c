package devcluster

import (
	"bytes"
	"strings"
	"testing"
)

// TestReadyLines: what the servers print, the parsers that dev, the
// benches and internal/clustertest wait on accept, and they accept no
// other server's line.
func TestReadyLines(t *testing.T) {
	var etcd, nimbus, supervisor bytes.Buffer
	PrintEtcdReady(&etcd, "gale", "http://127.0.0.1:2379")
	PrintNimbusReady(&nimbus, "gale", "127.0.0.1:6627", "n1")
	PrintSupervisorReady(&supervisor, "clicks", "s-1", "10.0.0.2", JoinInts([]int{6700, 6701}, ","))
	e, n, s := strings.TrimSpace(etcd.String()), strings.TrimSpace(nimbus.String()), strings.TrimSpace(supervisor.String())

	if url, ok := EtcdReady(e); !ok || url != "http://127.0.0.1:2379" {
		t.Errorf("EtcdReady(%q): got %q, %v", e, url, ok)
	}
	if addr, ok := NimbusReady(n); !ok || addr != "127.0.0.1:6627" {
		t.Errorf("NimbusReady(%q): got %q, %v", n, addr, ok)
	}
	if id := NimbusReadyID(n); id != "n1" {
		t.Errorf("NimbusReadyID(%q): got %q, want n1", n, id)
	}
	if id, ok := SupervisorReady(s); !ok || id != "s-1" {
		t.Errorf("SupervisorReady(%q): got %q, %v", s, id, ok)
	}
	for _, l := range []string{n, s, "gale etcd: warning: slow disk"} {
		if _, ok := EtcdReady(l); ok {
			t.Errorf("EtcdReady accepts %q", l)
		}
	}
	for _, l := range []string{e, s} {
		if _, ok := NimbusReady(l); ok {
			t.Errorf("NimbusReady accepts %q", l)
		}
	}
	for _, l := range []string{e, n, "gale supervisor: warning: no workers yet"} {
		if _, ok := SupervisorReady(l); ok {
			t.Errorf("SupervisorReady accepts %q", l)
		}
	}
}
