package supervisor

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gale-stream/gale/internal/testutil"
	"github.com/gale-stream/gale/internal/worker"
)

var (
	t0  = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg = StepConfig{
		Timeouts: Timeouts{Worker: 30 * time.Second, Start: 120 * time.Second, DownloadRetry: 5 * time.Second,
			ArtifactRetention: time.Minute},
		Ports: []int{6700, 6701, 6702, 6703},
		GOOS:  "linux", GOARCH: "amd64", WireVersion: 3,
	}
	art  = Artifact{SHA256: "aaaa000000000000", Size: 10, GOOS: "linux", GOARCH: "amd64", WireVersion: 3}
	have = map[string]ArtifactState{art.SHA256: {Ready: true}}
)

// want is a desired worker of topology t1 on port.
func want(port int, mod ...func(*Desired)) Desired {
	d := Desired{Port: port, Topology: "t1", Name: "wc", Version: 1, Active: true, Artifact: art, Factory: "wordcount",
		Assignment: worker.Assignment{Worker: 0, Workers: []string{fmt.Sprintf("127.0.0.1:%d", port), "10.0.0.2:6700"},
			Executors: []int{0, 1, 0, 1}}}
	for _, m := range mod {
		m(&d)
	}
	return d
}

// running is a live, connected worker on d's port launched at t0 that
// heartbeat at beat (zero: never).
func running(d Desired, beat time.Time, mod ...func(*Observed)) Observed {
	o := Observed{Port: d.Port, PID: 100 + d.Port, Running: d, LaunchedAt: t0, LastBeat: beat, Alive: true, Connected: true}
	for _, m := range mod {
		m(&o)
	}
	return o
}

func actions(p Plan) string {
	var s []string
	for _, a := range p.Actions {
		s = append(s, a.String())
	}
	return strings.Join(s, "; ")
}

func TestStep(t *testing.T) {
	other := Artifact{SHA256: "bbbb000000000000", GOOS: "linux", GOARCH: "amd64", WireVersion: 3}
	now := t0.Add(10 * time.Second)
	tests := []struct {
		name      string
		desired   []Desired
		observed  []Observed
		artifacts map[string]ArtifactState
		now       time.Time
		actions   string
		state     State // of port 6700
		why       string
	}{
		{name: "desired, artifact local: launch",
			desired: []Desired{want(6700)}, artifacts: have, now: now,
			actions: "launch 6700 t1 v1", state: Starting},
		{name: "desired, artifact missing: download",
			desired: []Desired{want(6700), want(6701)}, now: now,
			actions: "download aaaa000000000000", state: Waiting},
		{name: "artifact downloading: wait",
			desired: []Desired{want(6700)}, artifacts: map[string]ArtifactState{art.SHA256: {Downloading: true}}, now: now,
			actions: "", state: Waiting},
		{name: "download failed lately: wait",
			desired:   []Desired{want(6700)},
			artifacts: map[string]ArtifactState{art.SHA256: {Err: "leader unreachable", FailedAt: now.Add(-4 * time.Second)}}, now: now,
			actions: "", state: Waiting, why: "leader unreachable"},
		{name: "download failed a while ago: retry",
			desired:   []Desired{want(6700)},
			artifacts: map[string]ArtifactState{art.SHA256: {Err: "leader unreachable", FailedAt: now.Add(-5 * time.Second)}}, now: now,
			actions: "download aaaa000000000000", state: Waiting},
		{name: "artifact for another platform: refused, never fetched",
			desired: []Desired{want(6700, func(d *Desired) { d.Artifact.GOOS, d.Artifact.GOARCH = "darwin", "arm64" })}, now: now,
			actions: "", state: Refused, why: "built for darwin/arm64, this supervisor runs linux/amd64"},
		{name: "artifact of another wire version: refused",
			desired: []Desired{want(6700, func(d *Desired) { d.Artifact.WireVersion = 2 })}, artifacts: have, now: now,
			actions: "", state: Refused, why: "wire version 2, this supervisor's is 3"},
		{name: "port not a slot: refused",
			desired: []Desired{want(6800)}, artifacts: have, now: now,
			actions: ""},
		{name: "two topologies on one port: the first runs",
			desired: []Desired{want(6700, func(d *Desired) { d.Topology = "t2" }), want(6700)}, artifacts: have, now: now,
			actions: "launch 6700 t1 v1", state: Starting},
		{name: "no first heartbeat within the start grace: starting",
			desired: []Desired{want(6700)}, observed: []Observed{running(want(6700), time.Time{})}, artifacts: have,
			now: t0.Add(119 * time.Second), actions: "", state: Starting},
		{name: "no first heartbeat after the start grace: not started",
			desired: []Desired{want(6700)}, observed: []Observed{running(want(6700), time.Time{})}, artifacts: have,
			now: t0.Add(120 * time.Second), actions: "kill 6700 (not-started: no heartbeat 2m0s after launch (supervisor.worker.start.timeout.secs))", state: NotStarted},
		{name: "recent heartbeat: valid",
			desired: []Desired{want(6700)}, observed: []Observed{running(want(6700), now.Add(-29*time.Second))}, artifacts: have,
			now: now, actions: "", state: Valid},
		{name: "silent past the worker timeout: timed out",
			desired: []Desired{want(6700)}, observed: []Observed{running(want(6700), now.Add(-30*time.Second))}, artifacts: have,
			now: now, actions: "kill 6700 (timed-out: no heartbeat for 30s (supervisor.worker.timeout.secs))", state: TimedOut},
		{name: "assignment withdrawn: disallowed",
			observed: []Observed{running(want(6700), now)}, now: now,
			actions: "kill 6700 (disallowed: topology t1 is no longer assigned to port 6700)", state: Disallowed},
		{name: "executors moved: disallowed",
			desired:  []Desired{want(6700, func(d *Desired) { d.Version = 2; d.Assignment.Executors = []int{1, 0, 1, 0} })},
			observed: []Observed{running(want(6700), now)}, artifacts: have, now: now,
			actions: "kill 6700 (disallowed: port 6700's assignment changed (t1 v1 → t1 v2) beyond its peers' addresses)", state: Disallowed},
		{name: "another topology on the port: disallowed, its artifact fetched meanwhile",
			desired:  []Desired{want(6700, func(d *Desired) { d.Topology = "t2"; d.Artifact = other })},
			observed: []Observed{running(want(6700), now)}, artifacts: have, now: now,
			actions: "download bbbb000000000000; kill 6700 (disallowed: port 6700's assignment changed (t1 v1 → t2 v1) beyond its peers' addresses)", state: Disallowed},
		{name: "secret changed: disallowed",
			desired:  []Desired{want(6700, func(d *Desired) { d.Assignment.Secret = "s2" })},
			observed: []Observed{running(want(6700), now)}, artifacts: have, now: now,
			actions: "kill 6700 (disallowed: port 6700's assignment changed (t1 v1 → t1 v1) beyond its peers' addresses)", state: Disallowed},
		{name: "only a peer moved: reassign",
			desired:  []Desired{want(6700, func(d *Desired) { d.Version = 2; d.Assignment.Workers[1] = "10.0.0.3:6701" })},
			observed: []Observed{running(want(6700), now)}, artifacts: have, now: now,
			actions: "reassign 6700 t1 v2", state: Valid},
		{name: "reassignment sent: wait for the answer",
			desired:  []Desired{want(6700, func(d *Desired) { d.Version = 2; d.Assignment.Workers[1] = "10.0.0.3:6701" })},
			observed: []Observed{running(want(6700), now, func(o *Observed) { o.ReassignSent = 2 })}, artifacts: have, now: now,
			actions: "", state: Valid},
		{name: "reassignment refused: disallowed",
			desired:  []Desired{want(6700, func(d *Desired) { d.Version = 2; d.Assignment.Workers[1] = "10.0.0.3:6701" })},
			observed: []Observed{running(want(6700), now, func(o *Observed) { o.ReassignRefused = 2 })}, artifacts: have, now: now,
			actions: "kill 6700 (disallowed: it refused the reassignment to v2)", state: Disallowed},
		{name: "peer moved, control connection down: wait for it",
			desired:  []Desired{want(6700, func(d *Desired) { d.Version = 2; d.Assignment.Workers[1] = "10.0.0.3:6701" })},
			observed: []Observed{running(want(6700), now, func(o *Observed) { o.Connected = false })}, artifacts: have, now: now,
			actions: "", state: Valid},
		{name: "deactivated: deactivate",
			desired:  []Desired{want(6700, func(d *Desired) { d.Version = 2; d.Active = false })},
			observed: []Observed{running(want(6700), now)}, artifacts: have, now: now,
			actions: "deactivate 6700", state: Valid},
		{name: "activated while starting: activate",
			desired:  []Desired{want(6700)},
			observed: []Observed{running(want(6700, func(d *Desired) { d.Active = false }), time.Time{})}, artifacts: have, now: now,
			actions: "activate 6700", state: Starting},
		{name: "version bumped, nothing of this worker changed: nothing",
			desired:  []Desired{want(6700, func(d *Desired) { d.Version = 7 })},
			observed: []Observed{running(want(6700), now)}, artifacts: have, now: now,
			actions: "", state: Valid},
		{name: "being killed: wait for it to exit",
			observed: []Observed{running(want(6700), now, func(o *Observed) { o.Stopping = true; o.StopWhy = "timed-out: …" })}, now: now,
			actions: "", state: Stopping, why: "timed-out"},
		{name: "being killed, replacement desired: wait, fetch its artifact",
			desired:  []Desired{want(6700, func(d *Desired) { d.Topology = "t2"; d.Artifact = other })},
			observed: []Observed{running(want(6700), now, func(o *Observed) { o.Stopping = true })}, artifacts: have, now: now,
			actions: "download bbbb000000000000", state: Stopping},
		{name: "exited, still desired: relaunch",
			desired:  []Desired{want(6700)},
			observed: []Observed{running(want(6700), now, func(o *Observed) { o.Alive = false })}, artifacts: have, now: now,
			actions: "forget 6700; launch 6700 t1 v1", state: Starting},
		{name: "exited, restart backoff pending: wait",
			desired:  []Desired{want(6700)},
			observed: []Observed{running(want(6700), now, func(o *Observed) { o.Alive = false; o.RetryAt = now.Add(time.Second) })}, artifacts: have, now: now,
			actions: "", state: Waiting, why: "restarting it in 1s"},
		{name: "exited, restart backoff over: relaunch",
			desired:  []Desired{want(6700)},
			observed: []Observed{running(want(6700), now, func(o *Observed) { o.Alive = false; o.RetryAt = now })}, artifacts: have, now: now,
			actions: "forget 6700; launch 6700 t1 v1", state: Starting},
		{name: "exited, not desired: forget",
			observed: []Observed{running(want(6700), now, func(o *Observed) { o.Alive = false })}, now: now,
			actions: "forget 6700", state: Exited},
		{name: "dead and live entries for one port: the live one counts",
			desired: []Desired{want(6700)},
			observed: []Observed{running(want(6700), now, func(o *Observed) { o.Alive = false }),
				running(want(6700), now, func(o *Observed) { o.PID = 7 })}, artifacts: have, now: now,
			actions: "", state: Valid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.desired)
			p := Step(tt.desired, tt.observed, tt.artifacts, tt.now, cfg)
			if got := actions(p); got != tt.actions {
				t.Errorf("actions: got %q, want %q", got, tt.actions)
			}
			if !reflect.DeepEqual(in, tt.desired) {
				t.Errorf("Step modified its desired workers")
			}
			if tt.state == "" {
				for _, w := range p.Workers {
					if w.State != Refused {
						t.Errorf("got %+v, want only refused workers", w)
					}
				}
				return
			}
			var got WorkerState
			for _, w := range p.Workers {
				if w.Port == 6700 && w.Topology == "t1" {
					got = w
					break
				}
			}
			if got.State != tt.state || !strings.Contains(got.Why, tt.why) {
				t.Errorf("port 6700: got %s (%s), want %s (…%s…)", got.State, got.Why, tt.state, tt.why)
			}
			if again := Step(tt.desired, tt.observed, tt.artifacts, tt.now, cfg); !reflect.DeepEqual(again, p) {
				t.Errorf("a second step on the same input differs:\n%+v\n%+v", again, p)
			}
		})
	}
}

// TestStepRefusedPortNamesTheSlots checks the message for an assignment
// on a port that is not a slot.
func TestStepRefusedPortNamesTheSlots(t *testing.T) {
	p := Step([]Desired{want(6800)}, nil, have, t0, cfg)
	if len(p.Workers) != 1 || p.Workers[0].State != Refused ||
		!strings.Contains(p.Workers[0].Why, "port 6800 is not one of this supervisor's slots [6700 6701 6702 6703]") {
		t.Fatalf("got %+v, want port 6800 refused, naming the slots", p.Workers)
	}
}

// world is a fake process runner and artifact store driven by the
// actions of Step, with a fake clock.
type world struct {
	t       *testing.T
	rng     *rand.Rand
	now     time.Time
	nextPID int
	procs   []*fakeProc // every process ever launched
	arts    map[string]ArtifactState
	desired []Desired
	deleted int // artifacts deleted
}

type fakeProc struct {
	Observed
	hung      bool // stops heartbeating
	dieAt     int  // steps until a killed process exits
	refuseAll bool // refuses reassignments
}

func (w *world) live(port int) *fakeProc {
	for _, p := range w.procs {
		if p.Port == port && p.Alive {
			return p
		}
	}
	return nil
}

func (w *world) observed() []Observed {
	var os []Observed
	for _, p := range w.procs {
		if p.PID != 0 { // forgotten ones have PID 0
			os = append(os, p.Observed)
		}
	}
	return os
}

func (w *world) wantOn(port int) (Desired, bool) {
	for _, d := range sortedDesired(w.desired) {
		if d.Port == port {
			return d, true
		}
	}
	return Desired{}, false
}

// sameButPeers is the test's own notion of "this worker can stay":
// everything equal but the peers' addresses, Active and Version.
func sameButPeers(a, b Desired) bool {
	a.Assignment.Workers, b.Assignment.Workers = nil, nil
	a.Active, b.Active = false, false
	a.Version, b.Version = 0, 0
	return reflect.DeepEqual(a, b)
}

// step runs one reconcile step, checks the invariants and carries out
// the actions.
func (w *world) step() Plan {
	t := w.t
	t.Helper()
	p := Step(w.desired, w.observed(), w.arts, w.now, cfg)
	for sha, a := range w.arts {
		a.UnusedSince = p.Unused[sha]
		w.arts[sha] = a
	}
	killed := map[int]bool{}
	for _, a := range p.Actions {
		if a.Kind == Kill {
			killed[a.Port] = true
		}
	}
	for _, pr := range w.procs {
		if !pr.Alive || pr.Stopping {
			continue
		}
		d, ok := w.wantOn(pr.Port)
		disallowed := !ok || !sameButPeers(pr.Running, d) || (pr.ReassignRefused != 0 && pr.ReassignRefused == d.Version)
		if disallowed && !killed[pr.Port] {
			t.Fatalf("at %s: the worker on %d runs %+v, which is not desired (%+v), and is not killed; actions %s",
				w.now.Sub(t0), pr.Port, pr.Running, d, actions(p))
		}
		fresh := (!pr.LastBeat.IsZero() && w.now.Sub(pr.LastBeat) < cfg.Timeouts.Worker) ||
			(pr.LastBeat.IsZero() && w.now.Sub(pr.LaunchedAt) < cfg.Timeouts.Start)
		if !disallowed && fresh && killed[pr.Port] {
			t.Fatalf("at %s: the valid worker on %d was killed: %s", w.now.Sub(t0), pr.Port, actions(p))
		}
	}
	for _, a := range p.Actions {
		switch a.Kind {
		case Download:
			if w.arts[a.Artifact.SHA256].Downloading || w.arts[a.Artifact.SHA256].Ready {
				t.Fatalf("download of %s that is under way or done", a.Artifact.SHA256)
			}
			w.arts[a.Artifact.SHA256] = ArtifactState{Downloading: true}
		case Launch:
			if old := w.live(a.Port); old != nil {
				t.Fatalf("at %s: launch on port %d, where pid %d still runs", w.now.Sub(t0), a.Port, old.PID)
			}
			if !w.arts[a.Desired.Artifact.SHA256].Ready {
				t.Fatalf("launch of %s without its artifact", a.Desired.Topology)
			}
			w.nextPID++
			w.procs = append(w.procs, &fakeProc{Observed: Observed{Port: a.Port, PID: w.nextPID, Running: *a.Desired,
				LaunchedAt: w.now, Alive: true}})
		case Kill:
			pr := w.live(a.Port)
			if pr == nil || pr.Stopping {
				t.Fatalf("kill of port %d, where nothing runs or a kill is under way", a.Port)
			}
			pr.Stopping, pr.dieAt = true, w.rng.IntN(3)
		case Reassign, Activate, Deactivate:
			pr := w.live(a.Port)
			if pr == nil || !pr.Connected || pr.Stopping {
				t.Fatalf("%s to port %d, which cannot take it", a, a.Port)
			}
			switch a.Kind {
			case Reassign:
				if pr.refuseAll {
					pr.ReassignRefused = a.Desired.Version
				} else {
					pr.Running.Assignment.Workers = slices.Clone(a.Desired.Assignment.Workers)
					pr.Running.Version = a.Desired.Version
				}
			case Activate:
				pr.Running.Active = true
			case Deactivate:
				pr.Running.Active = false
			}
		case DeleteArtifact:
			sha := a.Artifact.SHA256
			if w.arts[sha].Downloading {
				t.Fatalf("at %s: delete of artifact %s while it downloads", w.now.Sub(t0), sha)
			}
			for _, d := range w.desired {
				if d.Artifact.SHA256 == sha {
					t.Fatalf("at %s: delete of artifact %s, which port %d's desired worker names", w.now.Sub(t0), sha, d.Port)
				}
			}
			for _, pr := range w.procs {
				if pr.Alive && pr.Running.Artifact.SHA256 == sha {
					t.Fatalf("at %s: delete of artifact %s, which pid %d runs", w.now.Sub(t0), sha, pr.PID)
				}
			}
			if since := w.arts[sha].UnusedSince; w.now.Sub(since) < cfg.Timeouts.ArtifactRetention {
				t.Fatalf("at %s: delete of artifact %s unused only since %s", w.now.Sub(t0), sha, since.Sub(t0))
			}
			delete(w.arts, sha)
			w.deleted++
		case Forget:
			found := false
			for _, pr := range w.procs {
				if pr.Port == a.Port && !pr.Alive && pr.PID != 0 {
					pr.PID, found = 0, true
				}
			}
			if !found {
				t.Fatalf("forget port %d, where no exited worker is known", a.Port)
			}
		}
	}
	return p
}

// tick advances the clock by d: processes heartbeat, connect, die when
// killed; downloads finish or fail.
func (w *world) tick(d time.Duration, failures bool) {
	w.now = w.now.Add(d)
	for sha, a := range w.arts {
		if a.Downloading {
			if failures && w.rng.IntN(4) == 0 {
				w.arts[sha] = ArtifactState{Err: "nimbus unreachable", FailedAt: w.now}
			} else {
				w.arts[sha] = ArtifactState{Ready: true}
			}
		}
	}
	for _, pr := range w.procs {
		if !pr.Alive {
			continue
		}
		if pr.Stopping {
			if pr.dieAt--; pr.dieAt < 0 {
				pr.Alive, pr.Connected = false, false
			}
			continue
		}
		if !pr.hung {
			pr.Connected, pr.LastBeat = true, w.now
		}
	}
}

// TestStepRandomized drives Step through random changes of assignments,
// crashes, hung workers and failed downloads, with a fake clock and a
// fake process runner, checking after every step that no port ever has
// two live workers, that a disallowed worker is always killed and a
// valid one never, and, once the changes stop, that every desired worker
// runs, valid.
func TestStepRandomized(t *testing.T) {
	seed := testutil.Seed(t)
	deleted := 0
	defer func() {
		if !t.Failed() && deleted == 0 {
			t.Error("no artifact was ever deleted in 200 rounds: the retention goes untested")
		}
	}()
	for round := range 200 {
		rng := rand.New(rand.NewPCG(seed, uint64(round)))
		w := &world{t: t, rng: rng, now: t0, arts: map[string]ArtifactState{}}
		arts := []Artifact{art, {SHA256: "bbbb000000000000", GOOS: "linux", GOARCH: "amd64", WireVersion: 3}}
		version := int64(0)
		for range 150 {
			switch rng.IntN(10) {
			case 0, 1: // a new assignment for a port
				version++
				port := cfg.Ports[rng.IntN(len(cfg.Ports))]
				d := want(port, func(d *Desired) {
					d.Version = version
					d.Topology = fmt.Sprintf("t%d", rng.IntN(2))
					d.Artifact = arts[rng.IntN(2)]
					d.Active = rng.IntN(2) == 0
					d.Assignment.Executors = []int{rng.IntN(2), 1, 0, 1}
				})
				w.desired = slices.DeleteFunc(w.desired, func(x Desired) bool { return x.Port == port })
				w.desired = append(w.desired, d)
			case 2: // a peer moves, or Active flips
				if len(w.desired) > 0 {
					version++
					i := rng.IntN(len(w.desired))
					d := w.desired[i]
					d.Version = version
					d.Assignment.Workers = slices.Clone(d.Assignment.Workers)
					if rng.IntN(2) == 0 {
						d.Assignment.Workers[1] = fmt.Sprintf("10.0.0.%d:6700", rng.IntN(9))
					} else {
						d.Active = !d.Active
					}
					w.desired[i] = d
				}
			case 3: // withdrawn
				if len(w.desired) > 0 {
					w.desired = slices.Delete(w.desired, 0, 1)
				}
			case 4: // a crash, a hang or a refusal
				if len(w.procs) > 0 {
					pr := w.procs[rng.IntN(len(w.procs))]
					switch rng.IntN(3) {
					case 0:
						pr.Alive, pr.Connected = false, false
					case 1:
						pr.hung, pr.Connected = true, false
					case 2:
						pr.refuseAll = true
					}
				}
			}
			w.step()
			w.tick(time.Duration(rng.IntN(40))*time.Second, true)
		}
		// The changes stop, the workers behave: every desired one must
		// end up running, valid, as desired.
		for _, pr := range w.procs {
			pr.refuseAll = false
		}
		var p Plan
		for range 300 {
			p = w.step()
			w.tick(time.Second, false)
		}
		for _, d := range w.desired {
			pr := w.live(d.Port)
			if pr == nil || pr.Stopping || !sameButPeers(pr.Running, d) || !samePeers(pr.Running, d) || pr.Running.Active != d.Active {
				t.Fatalf("round %d: port %d should run %+v, got %+v; last plan %+v", round, d.Port, d, pr, p)
			}
		}
		for _, ws := range p.Workers {
			if ws.State != Valid {
				t.Fatalf("round %d: after the changes stopped, got %+v, want every worker valid", round, ws)
			}
		}
		// 300 s without changes: only the artifacts in use are left.
		for sha := range w.arts {
			if !slices.ContainsFunc(w.desired, func(d Desired) bool { return d.Artifact.SHA256 == sha }) {
				t.Fatalf("round %d: artifact %s, which no desired worker names, is still kept after %s unchanged (retention %s)",
					round, sha, 300*time.Second, cfg.Timeouts.ArtifactRetention)
			}
		}
		deleted += w.deleted
	}
}

// TestStepDeletesUnusedArtifacts: an artifact that no desired worker
// names and no live worker runs is deleted once unused for the
// retention, counted from when a step first saw it unused; one in use,
// downloading, or used again meanwhile is kept. No real time passes.
func TestStepDeletesUnusedArtifacts(t *testing.T) {
	old := Artifact{SHA256: "bbbb000000000000", GOOS: "linux", GOARCH: "amd64", WireVersion: 3}
	dl := Artifact{SHA256: "cccc000000000000", GOOS: "linux", GOARCH: "amd64", WireVersion: 3}
	desired := []Desired{want(6700)} // runs art
	// A worker of the old artifact still stopping on 6701.
	stopping := running(want(6701, func(d *Desired) { d.Topology, d.Artifact = "t0", old }), t0, func(o *Observed) { o.Stopping = true })
	arts := map[string]ArtifactState{art.SHA256: {Ready: true}, old.SHA256: {Ready: true}, dl.SHA256: {Downloading: true}}
	observed := []Observed{running(want(6700), t0), stopping}
	// step runs Step at now and keeps Unused, as the supervisor does.
	step := func(now time.Time, c StepConfig) Plan {
		p := Step(desired, observed, arts, now, c)
		for sha, a := range arts {
			a.UnusedSince = p.Unused[sha]
			arts[sha] = a
		}
		return p
	}
	deletes := func(p Plan) string {
		var s []string
		for _, a := range p.Actions {
			if a.Kind == DeleteArtifact {
				s = append(s, a.Artifact.SHA256)
			}
		}
		return strings.Join(s, ",")
	}
	if p := step(t0, cfg); len(p.Unused) != 0 || deletes(p) != "" {
		t.Fatalf("with every artifact in use or downloading: unused %v, deletes %q; want none", p.Unused, deletes(p))
	}
	// The old worker exits: its artifact is unused from now on.
	observed = observed[:1]
	start := t0.Add(10 * time.Second)
	if p := step(start, cfg); !p.Unused[old.SHA256].Equal(start) || len(p.Unused) != 1 || deletes(p) != "" {
		t.Fatalf("the old worker gone: unused %v, deletes %q; want %s unused since %s, nothing deleted", p.Unused, deletes(p), old.SHA256, start)
	}
	if p := step(start.Add(cfg.Timeouts.ArtifactRetention-time.Second), cfg); deletes(p) != "" || !p.Unused[old.SHA256].Equal(start) {
		t.Fatalf("a second before the retention: unused %v, deletes %q; want it kept, unused since %s", p.Unused, deletes(p), start)
	}
	// Used again before the retention: the count starts over.
	desired = append(desired, want(6702, func(d *Desired) { d.Topology, d.Artifact = "t2", old }))
	if p := step(start.Add(cfg.Timeouts.ArtifactRetention-time.Second/2), cfg); len(p.Unused) != 0 {
		t.Fatalf("named again: unused %v, want none", p.Unused)
	}
	desired = desired[:1]
	again := start.Add(cfg.Timeouts.ArtifactRetention)
	if p := step(again, cfg); deletes(p) != "" || !p.Unused[old.SHA256].Equal(again) {
		t.Fatalf("unused again: unused %v, deletes %q; want it kept, unused since %s", p.Unused, deletes(p), again)
	}
	never := cfg
	never.Timeouts.ArtifactRetention = -1
	if p := step(again.Add(24*time.Hour), never); deletes(p) != "" {
		t.Fatalf("with a negative retention: deletes %q, want none", deletes(p))
	}
	p := step(again.Add(cfg.Timeouts.ArtifactRetention), cfg)
	if deletes(p) != old.SHA256 || p.Actions[len(p.Actions)-1].Kind != DeleteArtifact {
		t.Fatalf("at the retention: actions %q; want the old artifact deleted, last", actions(p))
	}
	// The download finishes and nothing names it: it is unused from then.
	arts[dl.SHA256] = ArtifactState{Ready: true}
	now := again.Add(2 * cfg.Timeouts.ArtifactRetention)
	if p := step(now, cfg); !p.Unused[dl.SHA256].Equal(now) || deletes(p) != old.SHA256 {
		t.Fatalf("after the download: unused %v, deletes %q", p.Unused, deletes(p))
	}
	atOnce := cfg
	atOnce.Timeouts.ArtifactRetention = 0
	if p := step(now, atOnce); deletes(p) != old.SHA256+","+dl.SHA256 {
		t.Fatalf("a retention of 0: deletes %q, want both unused artifacts at once", deletes(p))
	}
}
