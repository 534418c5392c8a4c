package coordination

import (
	"strings"
	"testing"
	"time"

	"github.com/gale-stream/gale/internal/nimbus"
	"github.com/gale-stream/gale/internal/plan"
	"github.com/gale-stream/gale/internal/scheduler"
)

func TestValidate(t *testing.T) {
	good := DefaultConfig()
	good.Exe = "/bin/gale"
	if err := good.Validate(); err != nil {
		t.Fatalf("the default config with a binary: %v", err)
	}
	tests := []struct {
		name   string
		change func(*Config)
		want   string // in the error
	}{
		{"one supervisor", func(c *Config) { c.Supervisors = 1 }, "--supervisors must be ≥ 2"},
		{"no slots", func(c *Config) { c.WorkersPer = 0 }, "--workers-per must be ≥ 1"},
		{"no topology workers", func(c *Config) { c.TopologyWorkers = 0 }, "--topology-workers must be ≥ 1"},
		{"no room to move", func(c *Config) { c.Supervisors, c.WorkersPer, c.TopologyWorkers = 10, 2, 19 },
			"give at most 18 workers"},
		{"no steady state", func(c *Config) { c.Steady = 0 }, "--steady must be > 0"},
		{"fractional timeout", func(c *Config) { c.SupervisorTimeout = 1500 * time.Millisecond }, "--supervisor-timeout must be a whole number of seconds"},
		{"sub-second reports", func(c *Config) { c.ReportEvery = 500 * time.Millisecond }, "--report-every must be a whole number of seconds"},
		{"negative conns", func(c *Config) { c.Conns = -1 }, "--conns must be ≥ 0"},
		{"no binary", func(c *Config) { c.Exe = "" }, "no gale binary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good
			tt.change(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate: got %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// The submitted word count has enough executors for every worker asked
// for: the scheduler gives it exactly that many.
func TestDefinitionFillsItsWorkers(t *testing.T) {
	for _, workers := range []int{1, 2, 3, 7, 10, 1000, 3995} {
		d := definition(workers)
		p, err := plan.New(nimbus.PlanTopology(d))
		if err != nil {
			t.Fatalf("%d workers: plan: %v", workers, err)
		}
		if got := scheduler.WorkerCount(p, int(d.GetWorkers())); got != workers {
			t.Errorf("%d workers: the scheduler gives the definition %d workers (%d executors)", workers, got, len(p.Executors))
		}
	}
}
