package supervisor

import (
	"strings"
	"testing"
	"time"

	"github.com/gale-stream/gale/internal/coord"
)

// TestNewRefusesWildcardHost: a supervisor registers its host for its
// workers' peers to dial; a wildcard address is refused with what to
// pass, a machine's address or name is taken.
func TestNewRefusesWildcardHost(t *testing.T) {
	base := Config{ID: "s1", Dir: t.TempDir(), Ports: []int{6700}, Store: &coord.Store{},
		WorkerTimeout: time.Second, StartTimeout: time.Second, WorkerHeartbeat: time.Second, ReportEvery: time.Second, LeaseTTL: time.Second}
	for _, host := range []string{"0.0.0.0", "::", "[::]", "0:0:0:0:0:0:0:0", ""} {
		cfg := base
		cfg.Host = host
		_, err := New(cfg)
		if err == nil || !strings.Contains(err.Error(), "this machine's address that the other machines reach") {
			t.Errorf("host %q: New gave %v; want a refusal saying what to pass", host, err)
		}
	}
	for _, host := range []string{"127.0.0.1", "10.0.0.1", "::1", "node-1.example.com"} {
		cfg := base
		cfg.Host = host
		if _, err := New(cfg); err != nil {
			t.Errorf("host %q: New gave %v; want it taken", host, err)
		}
	}
}
