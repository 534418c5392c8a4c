package coordination

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/gale-stream/gale/internal/config"
)

// Config says what Run simulates and measures.
type Config struct {
	// Exe is the gale binary Run starts `etcd` and `nimbus` from; Args
	// come before the subcommand (nil for gale itself) and Env is added
	// to this process's environment for them.
	Exe  string
	Args []string
	Env  []string

	// Supervisors is how many supervisors are simulated, WorkersPer the
	// worker slots of each.
	Supervisors int
	WorkersPer  int
	// TopologyWorkers is topology.workers of the topology scheduled.
	TopologyWorkers int
	// Fill submits a second topology that takes every slot left but one
	// supervisor's worth (which the detection phase needs to move the
	// lost workers to), so that nearly every slot reports a worker.
	Fill bool
	// Steady is how long the steady state is measured; Settle how long
	// Run waits before it, once everything is assigned, so that every
	// supervisor has reported its workers.
	Steady time.Duration
	Settle time.Duration
	// SupervisorTimeout is nimbus.supervisor.timeout.secs, the TTL of
	// each supervisor's lease; ReportEvery is
	// supervisor.heartbeat.frequency.secs, how often each reports. Both
	// are whole seconds; nimbus gets them in its gale.yaml.
	SupervisorTimeout time.Duration
	ReportEvery       time.Duration
	// Conns is how many gRPC connections the supervisors' reports share;
	// 0 gives each supervisor its own, as real ones have.
	Conns int
	// EtcdClients is how many etcd clients the supervisors' leases share
	// (each client multiplexes its leases' keep-alives on one stream).
	EtcdClients int

	// GaleVersion and WireVersion go in the supervisors' records and the
	// artifact's description, which must agree.
	GaleVersion string
	WireVersion int

	// Log gets the progress of the run, line by line, and the children's
	// output; nil discards it.
	Log io.Writer
}

// DefaultConfig is the experiment: 1,000 supervisors of 5 workers,
// a topology of 1,000 workers, 60 s of steady state, and Gale's defaults
// for the supervisor timeout and the report period.
func DefaultConfig() Config {
	eff, err := config.Resolve(nil, nil)
	timeout, every := 10, 5
	if err == nil {
		if v, ok := eff.Int(config.NimbusSupervisorTimeoutSecs); ok {
			timeout = v
		}
		if v, ok := eff.Int(config.SupervisorHeartbeatFrequencySecs); ok {
			every = v
		}
	}
	return Config{
		Supervisors:       1000,
		WorkersPer:        5,
		TopologyWorkers:   1000,
		Fill:              true,
		Steady:            60 * time.Second,
		Settle:            -1, // one report period
		SupervisorTimeout: time.Duration(timeout) * time.Second,
		ReportEvery:       time.Duration(every) * time.Second,
		EtcdClients:       4,
	}
}

// Validate names each setting that is out of range and what to do.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Supervisors < 2 {
		bad("--supervisors must be ≥ 2 (one dies in the detection phase and its workers move), got %d", c.Supervisors)
	}
	if c.WorkersPer < 1 {
		bad("--workers-per must be ≥ 1, got %d", c.WorkersPer)
	}
	if c.WorkersPer > 1000 {
		bad("--workers-per must be ≤ 1000 (each is a port of the supervisor), got %d", c.WorkersPer)
	}
	if c.TopologyWorkers < 1 {
		bad("--topology-workers must be ≥ 1, got %d", c.TopologyWorkers)
	} else if slots := c.Supervisors * c.WorkersPer; c.Supervisors >= 2 && c.WorkersPer >= 1 && c.TopologyWorkers > slots-c.WorkersPer {
		bad("--topology-workers %d does not fit: %d supervisors × %d slots = %d slots, and one supervisor's %d must stay free for the detection phase to move its workers to: give at most %d workers, or more supervisors",
			c.TopologyWorkers, c.Supervisors, c.WorkersPer, slots, c.WorkersPer, slots-c.WorkersPer)
	}
	if c.Steady <= 0 {
		bad("--steady must be > 0, got %v", c.Steady)
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--supervisor-timeout", c.SupervisorTimeout}, {"--report-every", c.ReportEvery}} {
		if d.v < time.Second || d.v%time.Second != 0 {
			bad("%s must be a whole number of seconds ≥ 1s (it is a *.secs key), got %v", d.flag, d.v)
		}
	}
	if c.Conns < 0 {
		bad("--conns must be ≥ 0 (0: one per supervisor), got %d", c.Conns)
	}
	if c.EtcdClients < 1 {
		bad("the supervisors need ≥ 1 etcd client, got %d", c.EtcdClients)
	}
	if c.Exe == "" {
		bad("no gale binary to run etcd and nimbus from")
	}
	return errors.Join(errs...)
}

// settle is how long Run waits between the last assignment and the
// steady state.
func (c Config) settle() time.Duration {
	if c.Settle < 0 {
		return c.ReportEvery
	}
	return c.Settle
}

// conns is how many report connections there are.
func (c Config) conns() int {
	if c.Conns == 0 || c.Conns > c.Supervisors {
		return c.Supervisors
	}
	return c.Conns
}

// goos and goarch are this machine's, given to the supervisors and the
// artifact alike.
var goos, goarch = runtime.GOOS, runtime.GOARCH
