package coord

import (
	"time"

	"github.com/gale-stream/gale/internal/plan"
)

// The key layout. Everything Gale keeps in etcd lives under /gale/; values
// are the JSON of the records below.
const (
	// TopologiesPrefix holds /gale/topologies/<id> → Topology.
	TopologiesPrefix = "/gale/topologies/"
	// AssignmentsPrefix holds /gale/assignments/<id> → Assignment.
	AssignmentsPrefix = "/gale/assignments/"
	// SupervisorsPrefix holds /gale/supervisors/<id> → Supervisor, bound
	// to the supervisor's lease.
	SupervisorsPrefix = "/gale/supervisors/"
	// NimbusPrefix holds the nimbus members, the election and the
	// artifact holds, all bound to nimbus leases.
	NimbusPrefix = "/gale/nimbus/"

	namesPrefix    = "/gale/names/"            // <name> → topology id
	membersPrefix  = NimbusPrefix + "members/" // <nimbusID> → Nimbus
	electionPrefix = NimbusPrefix + "election" // concurrency.Election; value = nimbus id
	holdsPrefix    = NimbusPrefix + "holds/"   // <nimbusID>/<sha256> → ""
)

// Topology statuses.
const (
	StatusActive      = "ACTIVE"
	StatusInactive    = "INACTIVE"
	StatusRebalancing = "REBALANCING"
	StatusKilled      = "KILLED"
)

// Artifact describes a topology's binary: its checksum, size and what it
// runs on.
type Artifact struct {
	SHA256      string `json:"sha256"`
	Size        int64  `json:"size"`
	GOOS        string `json:"goos"`
	GOARCH      string `json:"goarch"`
	GaleVersion string `json:"gale_version"`
	WireVersion int    `json:"wire_version"`
}

// Topology is a submitted topology, as nimbus keeps it.
type Topology struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Definition holds the components, tasks, parallelism and streams.
	Definition plan.Topology `json:"definition"`
	// Workers is topology.workers.
	Workers int `json:"workers"`
	// Factory is the topology's name inside the artifact.
	Factory string            `json:"factory"`
	Params  map[string]string `json:"params,omitempty"`
	// Config is the topology layer: the binary's Build config and
	// submit's -c flags.
	Config   map[string]any `json:"config,omitempty"`
	Artifact Artifact       `json:"artifact"`
	// Status is one of the Status constants.
	Status string `json:"status"`
	// Parallelism holds rebalance -e overrides, component → executors.
	Parallelism map[string]int `json:"parallelism,omitempty"`
	// Secret is the per-topology secret of worker hellos, hex.
	Secret      string    `json:"secret"`
	SubmittedAt time.Time `json:"submitted_at"`
	// Deadline is when the wait of a kill or a rebalance in progress
	// ends (Status KILLED or REBALANCING): the leader then removes the
	// topology, or applies Rebalance. Kept here, not in a nimbus's
	// memory, so that a leader that takes over finishes it. Zero
	// otherwise.
	Deadline time.Time `json:"deadline,omitzero"`
	// Rebalance is what a REBALANCING topology becomes at Deadline.
	Rebalance *Rebalance `json:"rebalance,omitempty"`
	// Rev is the etcd mod revision the record was read at, set by the
	// Store's reads and not stored: a write of the record is made only
	// while it is still that revision (0: a record not read from etcd).
	Rev int64 `json:"-"`
}

func (t *Topology) setRev(rev int64)   { t.Rev = rev }
func (a *Assignment) setRev(rev int64) { a.Rev = rev }

// Rebalance is a rebalance in progress: the topology's worker count and
// executor overrides after it, and the status it resumes in.
type Rebalance struct {
	Workers     int            `json:"workers"`
	Parallelism map[string]int `json:"parallelism,omitempty"`
	// Resume is StatusActive or StatusInactive.
	Resume string `json:"resume"`
}

// Slot is one worker slot: a port of a supervisor.
type Slot struct {
	Supervisor string `json:"supervisor"`
	Host       string `json:"host"`
	Port       int    `json:"port"`
}

// Assignment is what a supervisor needs to run a topology's workers,
// self-contained.
type Assignment struct {
	// Topology is the topology id.
	Topology string `json:"topology"`
	Name     string `json:"name"`
	// Version goes up on every change of this record.
	Version int64 `json:"version"`
	// Workers maps worker index → slot.
	Workers []Slot `json:"workers"`
	// Executors maps executor index → worker index.
	Executors   []int          `json:"executors"`
	Parallelism map[string]int `json:"parallelism,omitempty"`
	// Active says whether spouts should run.
	Active   bool              `json:"active"`
	Artifact Artifact          `json:"artifact"`
	Factory  string            `json:"factory"`
	Params   map[string]string `json:"params,omitempty"`
	Config   map[string]any    `json:"config,omitempty"`
	Secret   string            `json:"secret"`
	// Rev is the etcd mod revision the record was read at, as
	// Topology.Rev; 0 for one not read from etcd.
	Rev int64 `json:"-"`
}

// Supervisor is a live supervisor's membership record.
type Supervisor struct {
	ID          string    `json:"id"`
	Host        string    `json:"host"`
	Ports       []int     `json:"ports"`
	GOOS        string    `json:"goos"`
	GOARCH      string    `json:"goarch"`
	GaleVersion string    `json:"gale_version"`
	WireVersion int       `json:"wire_version"`
	Started     time.Time `json:"started"`
}

// Nimbus is a live nimbus's membership record.
type Nimbus struct {
	ID      string    `json:"id"`
	Addr    string    `json:"addr"`
	Started time.Time `json:"started"`
}
