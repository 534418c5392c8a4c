package supervisor

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gale-stream/gale/internal/worker"
)

// Artifact is the binary a desired worker runs, as nimbus recorded it at
// submission (coord.Artifact).
type Artifact struct {
	SHA256      string `json:"sha256"`
	Size        int64  `json:"size"`
	GOOS        string `json:"goos"`
	GOARCH      string `json:"goarch"`
	GaleVersion string `json:"gale_version,omitempty"`
	WireVersion int    `json:"wire_version"`
}

// Desired is one worker this supervisor should run: one slot of an
// assignment that names this supervisor.
type Desired struct {
	Port     int    `json:"port"`
	Topology string `json:"topology"` // id
	Name     string `json:"name"`
	// Version is the assignment's version; it changes with every change
	// of the assignment, including ones that leave this worker alone.
	Version  int64             `json:"version"`
	Active   bool              `json:"active"`
	Artifact Artifact          `json:"artifact"`
	Factory  string            `json:"factory"`
	Params   map[string]string `json:"params,omitempty"`
	Config   map[string]any    `json:"config,omitempty"`
	// Assignment is this worker's place in the topology: its index, every
	// worker's address, the executor map, the parallelism and the secret.
	Assignment worker.Assignment `json:"assignment"`
}

// restartKey holds everything about a desired worker that a running one
// cannot change without a restart: all but the peers' addresses (a
// Reassign changes those) and Active (Activate / Deactivate).
func (d Desired) restartKey() string {
	b, _ := json.Marshal(struct {
		Port        int
		Topology    string
		Artifact    string
		Factory     string
		Params      map[string]string
		Config      map[string]any
		Worker      int
		Workers     int
		Executors   []int
		Parallelism map[string]int
		Secret      string
	}{d.Port, d.Topology, d.Artifact.SHA256, d.Factory, d.Params, d.Config,
		d.Assignment.Worker, len(d.Assignment.Workers), d.Assignment.Executors, d.Assignment.Parallelism, d.Assignment.Secret})
	return string(b)
}

func samePeers(a, b Desired) bool { return slices.Equal(a.Assignment.Workers, b.Assignment.Workers) }

// Observed is a worker process this supervisor knows: one it launched or
// adopted from its local state.
type Observed struct {
	Port int
	PID  int
	// Running is what the worker runs: the desired worker it was launched
	// with, updated by the reassignments and (de)activations it was sent.
	Running    Desired
	LaunchedAt time.Time
	// LastBeat is when its last heartbeat arrived; zero until the first.
	// (An adopted worker counts from its adoption.)
	LastBeat time.Time
	// Alive: the process has not exited.
	Alive bool
	// Connected: its control connection is up, so commands reach it.
	Connected bool
	// Stopping: a Kill is under way (stop line, SIGTERM, then SIGKILL),
	// StopWhy its reason.
	Stopping bool
	StopWhy  string
	// RetryAt, for an exited worker still desired, is the earliest time
	// to launch it again (a worker that keeps crashing is restarted with
	// backoff); zero: at once.
	RetryAt time.Time
	// ReassignSent is the assignment version of the reassignment sent to
	// it and not answered yet, ReassignRefused that of one it refused.
	ReassignSent, ReassignRefused int64
}

// ArtifactState is what this supervisor has of an artifact.
type ArtifactState struct {
	// Ready: verified and stored locally.
	Ready bool
	// Downloading: a download is under way.
	Downloading bool
	// Err is the last download's error; FailedAt when it failed.
	Err      string
	FailedAt time.Time
	// UnusedSince is when the artifact was first seen unused in a row of
	// steps (no desired worker names it, no live worker runs it), as the
	// last Plan's Unused says; zero while used.
	UnusedSince time.Time
}

// Timeouts are the reconcile step's clocks.
type Timeouts struct {
	// Worker is supervisor.worker.timeout.secs: a worker silent this long
	// has timed out.
	Worker time.Duration
	// Start is supervisor.worker.start.timeout.secs: a worker without a
	// first heartbeat after this long has not started.
	Start time.Duration
	// DownloadRetry is the pause after a failed download.
	DownloadRetry time.Duration
	// ArtifactRetention is supervisor.artifact.retention.secs: an
	// artifact unused this long is deleted (zero: at once; negative:
	// never).
	ArtifactRetention time.Duration
}

// StepConfig is what the reconcile step knows of this supervisor.
type StepConfig struct {
	Timeouts Timeouts
	// Ports are the slots (supervisor.slots.ports).
	Ports []int
	// GOOS, GOARCH and WireVersion are what this machine and this
	// binary's peers run: an artifact built for others is refused.
	GOOS, GOARCH string
	WireVersion  int
}

// State is a worker's classification: the paper's four states, plus
// starting (within the start grace) and, for a desired worker that does
// not run, why not.
type State string

// The states.
const (
	Valid      State = "valid"
	TimedOut   State = "timed-out"
	NotStarted State = "not-started"
	Disallowed State = "disallowed"
	Starting   State = "starting"
	// Stopping: being killed. Exited: the process is gone.
	Stopping State = "stopping"
	Exited   State = "exited"
	// Waiting: desired, not running yet (its artifact is being fetched,
	// or the slot is being freed). Refused: desired, but this supervisor
	// cannot run it (Why says why).
	Waiting State = "waiting"
	Refused State = "refused"
)

// ActionKind is what an Action does.
type ActionKind int

// The actions.
const (
	// Launch starts Desired on Port (no live worker is on Port).
	Launch ActionKind = iota + 1
	// Kill stops the worker on Port (stop line, SIGTERM, SIGKILL), Why
	// saying why.
	Kill
	// Reassign sends the worker on Port its new peers' addresses, Desired.
	Reassign
	// Activate and Deactivate turn the spouts of the worker on Port on
	// or off.
	Activate
	Deactivate
	// Download fetches Artifact.
	Download
	// Forget drops the exited worker on Port from the supervisor's state.
	Forget
	// DeleteArtifact deletes Artifact (its SHA256) from the local store:
	// unused for Timeouts.ArtifactRetention.
	DeleteArtifact
)

var kindNames = [...]string{Launch: "launch", Kill: "kill", Reassign: "reassign",
	Activate: "activate", Deactivate: "deactivate", Download: "download", Forget: "forget", DeleteArtifact: "delete-artifact"}

func (k ActionKind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("action(%d)", int(k))
}

// Action is one thing the supervisor must do.
type Action struct {
	Kind     ActionKind
	Port     int
	Why      string   // Kill
	Desired  *Desired // Launch, Reassign
	Artifact Artifact // Download, DeleteArtifact (its SHA256 only)
}

func (a Action) String() string {
	switch a.Kind {
	case Launch, Reassign:
		return fmt.Sprintf("%s %d %s v%d", a.Kind, a.Port, a.Desired.Topology, a.Desired.Version)
	case Kill:
		return fmt.Sprintf("kill %d (%s)", a.Port, a.Why)
	case Download:
		return "download " + a.Artifact.SHA256
	case DeleteArtifact:
		return "delete-artifact " + a.Artifact.SHA256
	default:
		return fmt.Sprintf("%s %d", a.Kind, a.Port)
	}
}

// WorkerState is one slot's classification, for the supervisor's report.
type WorkerState struct {
	Port     int
	Topology string
	State    State
	Why      string
}

// Plan is the outcome of one reconcile step.
type Plan struct {
	Actions []Action
	// Workers classifies every observed worker and every desired one
	// that does not run, by port.
	Workers []WorkerState
	// Unused holds, for each artifact of the store that no desired worker
	// names and no live worker runs (and is not downloading), since when
	// it has been unused: its ArtifactState.UnusedSince, or now if that
	// is zero. The caller keeps it in UnusedSince for the next step (and
	// zero for the artifacts not listed).
	Unused map[string]time.Time
}

// Step compares the desired workers with the observed ones at now and
// says what to do. It is a pure function of its arguments: the same
// inputs give the same plan, in the same order (by port, downloads
// first). It does not modify its arguments.
//
// A worker whose assignment is withdrawn, or changed in more than its
// peers' addresses, is disallowed and killed; one silent past
// Timeouts.Worker is timed out and killed; one without a first heartbeat
// after Timeouts.Start has not started and is killed. A killed worker is
// launched again once its process has exited: there is never more than
// one live worker on a port. A valid worker is never killed while it
// stays desired: a change of peers is a Reassign, a change of Active an
// Activate or Deactivate.
//
// An artifact of the store that no desired worker names, no live worker
// runs and no download is writing is unused (Plan.Unused); once unused
// for Timeouts.ArtifactRetention it is deleted (DeleteArtifact, after
// the other actions), so that the binaries of killed topologies do not
// pile up. One needed again later is downloaded again.
func Step(desired []Desired, observed []Observed, artifacts map[string]ArtifactState, now time.Time, cfg StepConfig) Plan {
	var p Plan
	want := map[int]Desired{}
	downloads := map[string]bool{}
	for _, d := range sortedDesired(desired) {
		if _, dup := want[d.Port]; dup {
			p.Workers = append(p.Workers, WorkerState{d.Port, d.Topology, Refused,
				fmt.Sprintf("port %d is assigned to %s as well; it runs that one", d.Port, want[d.Port].Topology)})
			continue
		}
		if !slices.Contains(cfg.Ports, d.Port) {
			p.Workers = append(p.Workers, WorkerState{d.Port, d.Topology, Refused,
				fmt.Sprintf("port %d is not one of this supervisor's slots %v (supervisor.slots.ports)", d.Port, cfg.Ports)})
			continue
		}
		want[d.Port] = d
	}
	obs := map[int]Observed{}
	for _, o := range observed {
		// Several entries for one port: the live one counts (the caller
		// keeps one per port; this is defence).
		if prev, ok := obs[o.Port]; !ok || !prev.Alive {
			obs[o.Port] = o
		}
	}
	for _, port := range ports(want, obs) {
		d, isWanted := want[port]
		o, isObserved := obs[port]
		switch {
		case isObserved && o.Alive:
			st, why := classify(o, d, isWanted, now, cfg.Timeouts)
			p.Workers = append(p.Workers, WorkerState{port, o.Running.Topology, st, why})
			switch st {
			case TimedOut, NotStarted, Disallowed:
				p.Actions = append(p.Actions, Action{Kind: Kill, Port: port, Why: string(st) + ": " + why})
			case Valid, Starting:
				if !isWanted || !o.Connected {
					break
				}
				if !samePeers(o.Running, d) && o.ReassignSent != d.Version {
					dd := d
					p.Actions = append(p.Actions, Action{Kind: Reassign, Port: port, Desired: &dd})
				}
				if d.Active != o.Running.Active {
					k := Deactivate
					if d.Active {
						k = Activate
					}
					p.Actions = append(p.Actions, Action{Kind: k, Port: port})
				}
			}
			if isWanted && st != Valid && st != Starting {
				// Fetch what the replacement will need while the old one stops.
				if a := artifacts[d.Artifact.SHA256]; needDownload(a, now, cfg.Timeouts) && platformError(d.Artifact, cfg) == "" {
					downloads[d.Artifact.SHA256] = true
				}
			}
		case isWanted:
			if isObserved && now.Before(o.RetryAt) {
				p.Workers = append(p.Workers, WorkerState{port, d.Topology, Waiting,
					fmt.Sprintf("the worker keeps exiting; restarting it in %s", o.RetryAt.Sub(now))})
				break
			}
			if isObserved {
				p.Actions = append(p.Actions, Action{Kind: Forget, Port: port})
			}
			if why := platformError(d.Artifact, cfg); why != "" {
				p.Workers = append(p.Workers, WorkerState{port, d.Topology, Refused, why})
				break
			}
			a := artifacts[d.Artifact.SHA256]
			switch {
			case a.Ready:
				dd := d
				p.Actions = append(p.Actions, Action{Kind: Launch, Port: port, Desired: &dd})
				p.Workers = append(p.Workers, WorkerState{port, d.Topology, Starting, "launching"})
			case needDownload(a, now, cfg.Timeouts):
				downloads[d.Artifact.SHA256] = true
				p.Workers = append(p.Workers, WorkerState{port, d.Topology, Waiting, "downloading artifact " + short(d.Artifact.SHA256)})
			case a.Downloading:
				p.Workers = append(p.Workers, WorkerState{port, d.Topology, Waiting, "downloading artifact " + short(d.Artifact.SHA256)})
			default:
				p.Workers = append(p.Workers, WorkerState{port, d.Topology, Waiting,
					fmt.Sprintf("artifact %s: %s (retrying)", short(d.Artifact.SHA256), a.Err)})
			}
		default: // observed, exited, not wanted
			p.Workers = append(p.Workers, WorkerState{port, o.Running.Topology, Exited, ""})
			p.Actions = append(p.Actions, Action{Kind: Forget, Port: port})
		}
	}
	if len(downloads) > 0 {
		var dl []Action
		for _, d := range sortedDesired(desired) {
			if downloads[d.Artifact.SHA256] {
				delete(downloads, d.Artifact.SHA256)
				dl = append(dl, Action{Kind: Download, Artifact: d.Artifact})
			}
		}
		p.Actions = append(dl, p.Actions...)
	}
	used := map[string]bool{}
	for _, d := range desired {
		used[d.Artifact.SHA256] = true
	}
	for _, o := range observed {
		if o.Alive {
			used[o.Running.Artifact.SHA256] = true
		}
	}
	for _, sha := range slices.Sorted(maps.Keys(artifacts)) {
		a := artifacts[sha]
		if used[sha] || a.Downloading {
			continue
		}
		since := a.UnusedSince
		if since.IsZero() {
			since = now
		}
		if p.Unused == nil {
			p.Unused = map[string]time.Time{}
		}
		p.Unused[sha] = since
		if r := cfg.Timeouts.ArtifactRetention; r >= 0 && now.Sub(since) >= r {
			p.Actions = append(p.Actions, Action{Kind: DeleteArtifact, Artifact: Artifact{SHA256: sha}})
		}
	}
	return p
}

// classify returns the state of a live observed worker and why, given
// the desired worker for its port (if isWanted).
func classify(o Observed, d Desired, isWanted bool, now time.Time, t Timeouts) (State, string) {
	switch {
	case o.Stopping:
		return Stopping, o.StopWhy
	case !isWanted:
		return Disallowed, fmt.Sprintf("topology %s is no longer assigned to port %d", o.Running.Topology, o.Port)
	case o.Running.restartKey() != d.restartKey():
		return Disallowed, fmt.Sprintf("port %d's assignment changed (%s v%d → %s v%d) beyond its peers' addresses",
			o.Port, o.Running.Topology, o.Running.Version, d.Topology, d.Version)
	case o.ReassignRefused != 0 && o.ReassignRefused == d.Version:
		return Disallowed, fmt.Sprintf("it refused the reassignment to v%d", d.Version)
	case o.LastBeat.IsZero():
		if now.Sub(o.LaunchedAt) >= t.Start {
			return NotStarted, fmt.Sprintf("no heartbeat %s after launch (supervisor.worker.start.timeout.secs)", t.Start)
		}
		return Starting, ""
	case now.Sub(o.LastBeat) >= t.Worker:
		return TimedOut, fmt.Sprintf("no heartbeat for %s (supervisor.worker.timeout.secs)", now.Sub(o.LastBeat))
	}
	return Valid, ""
}

func needDownload(a ArtifactState, now time.Time, t Timeouts) bool {
	switch {
	case a.Ready, a.Downloading:
		return false
	case a.Err == "":
		return true
	}
	return now.Sub(a.FailedAt) >= t.DownloadRetry
}

// platformError says why this supervisor cannot run an artifact, or "".
func platformError(a Artifact, cfg StepConfig) string {
	var why []string
	if a.GOOS != cfg.GOOS || a.GOARCH != cfg.GOARCH {
		why = append(why, fmt.Sprintf("built for %s/%s, this supervisor runs %s/%s: submit a binary built with GOOS=%s GOARCH=%s",
			a.GOOS, a.GOARCH, cfg.GOOS, cfg.GOARCH, cfg.GOOS, cfg.GOARCH))
	}
	if a.WireVersion != cfg.WireVersion {
		why = append(why, fmt.Sprintf("wire version %d, this supervisor's is %d: rebuild the topology against this Gale version",
			a.WireVersion, cfg.WireVersion))
	}
	if len(why) == 0 {
		return ""
	}
	return "artifact " + short(a.SHA256) + " " + strings.Join(why, "; ")
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func sortedDesired(ds []Desired) []Desired {
	s := slices.Clone(ds)
	slices.SortStableFunc(s, func(a, b Desired) int {
		if a.Port != b.Port {
			return a.Port - b.Port
		}
		return strings.Compare(a.Topology, b.Topology)
	})
	return s
}

func ports(want map[int]Desired, obs map[int]Observed) []int {
	var ps []int
	for p := range want {
		ps = append(ps, p)
	}
	for p := range obs {
		if _, ok := want[p]; !ok {
			ps = append(ps, p)
		}
	}
	slices.Sort(ps)
	return ps
}
