//go:build unix

package supervisor

import (
	"testing"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/coord"
)

// TestSupervisorSendsTheClusterToken: Report and Download need the
// cluster's bearer token where nimbus checks one, so a supervisor whose
// cluster config has it sends it on both.
func TestSupervisorSendsTheClusterToken(t *testing.T) {
	tc := newTestCluster(t)
	ports := freePorts(t, 1)
	cfg := tc.supervisorConfig(t, shortDir(t), ports)
	cfg.Cluster = gale.Config{config.NimbusAuthToken: "s3cret"}
	runSupervisor(t, cfg)
	asg := coord.Assignment{Topology: "t1", Name: "ticks", Version: 1, Active: true, Artifact: tc.art, Factory: "ticks",
		Workers: []coord.Slot{{Supervisor: "s1", Host: "127.0.0.1", Port: ports[0]}}}
	if err := tc.store.PutAssignment(t.Context(), asg); err != nil {
		t.Fatal(err)
	}
	var pid int32
	tc.nimbus.waitReport(t, "a valid worker", validOn(ports[0], &pid, true))
	tc.nimbus.mu.Lock()
	defer tc.nimbus.mu.Unlock()
	for _, method := range []string{"Download", "Report"} {
		calls := tc.nimbus.auth[method]
		if len(calls) == 0 {
			t.Errorf("no %s call", method)
		}
		for i, got := range calls {
			if got != "Bearer s3cret" {
				t.Errorf("%s call %d: authorization %q, want %q", method, i, got, "Bearer s3cret")
			}
		}
	}
}
