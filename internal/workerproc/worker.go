// Package workerproc runs a topology's share in a worker process and
// launches such processes: the hidden `gale worker` subcommand on one side,
// `gale bench --workers N`, `gale run --workers N` and multi-process tests
// on the other. A supervisor (internal/supervisor) runs workers in the
// supervised mode instead (Spec.Supervised, which documents its protocol).
//
// A worker is started with a Spec (a JSON file) and talks to whoever
// launched it over its standard streams, one JSON object per line; its
// logs go to stderr.
//
//	worker → launcher   {"event":"listening","addr":"127.0.0.1:41234","pid":…}
//	launcher → worker   {"cmd":"start","workers":["127.0.0.1:41234",…]}
//	worker → launcher   {"event":"started"}
//	worker → launcher   {"event":"heartbeat",…} every Spec.HeartbeatMS
//	launcher → worker   {"cmd":"deactivate"} | {"cmd":"activate"} | {"cmd":"stop"}
//	worker → launcher   {"event":"stopped",…} (the last heartbeat), then exit 0
//	worker → launcher   {"event":"failed","error":"…"}, then exit 1
//
// The worker binds its listener before it knows its peers, so a launcher
// can let each pick a free port (Spec.Listen ending in ":0") and then tell
// every worker all the addresses. End of input on stdin (the launcher
// died) or SIGTERM stops the worker as "stop" does.
package workerproc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/bridge"
	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/metrics"
	"github.com/gale-stream/gale/internal/procstat"
	"github.com/gale-stream/gale/internal/worker"
	"github.com/gale-stream/gale/internal/workermem"
)

// Spec is what a worker process is started with.
type Spec struct {
	// Topology is the name the topology runs under, the same in every
	// worker.
	Topology string `json:"topology"`
	// Factory names the function in this binary that builds the topology
	// (Register); Params are its parameters.
	Factory string          `json:"factory"`
	Params  json.RawMessage `json:"params,omitempty"`
	// Config is the topology config layer, on top of the factory's.
	Config gale.Config `json:"config,omitempty"`
	// Cluster is the cluster's layer (gale.yaml's keys, such as
	// worker.heap.memory.mb), beneath both.
	Cluster gale.Config `json:"cluster,omitempty"`
	// Worker is this worker's index, Workers how many there are.
	Worker  int `json:"worker"`
	Workers int `json:"workers"`
	// Listen is the address to accept peers on; port 0 picks a free one.
	Listen string `json:"listen"`
	// HeartbeatMS is the period of heartbeats to the launcher.
	HeartbeatMS int `json:"heartbeat_ms"`
	// LogLevel is the least level logged to stderr: debug, info (the
	// default), warn or error.
	LogLevel string `json:"log_level,omitempty"`
	// Supervised, if set, runs the worker under a supervisor (Supervised
	// documents the protocol) instead of the launcher's stdin and stdout.
	Supervised *Supervised `json:"supervised,omitempty"`
}

// Level is the spec's log level.
func (s Spec) Level() slog.Level {
	var l slog.Level
	if l.UnmarshalText([]byte(s.LogLevel)) != nil {
		return slog.LevelInfo
	}
	return l
}

// Validate names what is wrong with a spec.
func (s Spec) Validate() error {
	var errs []error
	if s.Topology == "" {
		errs = append(errs, errors.New(`"topology" is empty`))
	}
	if _, ok := lookup(s.Factory); !ok {
		errs = append(errs, fmt.Errorf(`"factory": this binary has no topology %q (it has %v)`, s.Factory, names()))
	}
	if s.Workers < 1 || s.Worker < 0 || s.Worker >= s.Workers {
		errs = append(errs, fmt.Errorf(`"worker" %d of "workers" %d: want 0 ≤ worker < workers`, s.Worker, s.Workers))
	}
	if _, _, err := net.SplitHostPort(s.Listen); err != nil {
		errs = append(errs, fmt.Errorf(`"listen" %q: %v`, s.Listen, err))
	}
	if s.LogLevel != "" {
		var l slog.Level
		if err := l.UnmarshalText([]byte(s.LogLevel)); err != nil {
			errs = append(errs, fmt.Errorf(`"log_level" %q: want debug, info, warn or error`, s.LogLevel))
		}
	}
	if s.HeartbeatMS <= 0 {
		errs = append(errs, fmt.Errorf(`"heartbeat_ms" %d: want > 0`, s.HeartbeatMS))
	}
	if s.Supervised != nil {
		errs = append(errs, s.Supervised.validate(s)...)
	}
	if len(errs) > 0 {
		return fmt.Errorf("worker spec: %w", errors.Join(errs...))
	}
	return nil
}

// ReadSpec reads and validates a spec file.
func ReadSpec(path string) (Spec, error) {
	var s Spec
	b, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("worker spec %s: %w", path, err)
	}
	return s, s.Validate()
}

// Built is a topology a Factory made.
type Built struct {
	Topology *gale.Topology
	Config   gale.Config
	// Stats, if set, is called for every heartbeat; its result goes in the
	// heartbeat's "stats" as JSON.
	Stats func() any
	// Close, if set, is called after the worker stopped.
	Close func()
}

// Factory builds a topology from its parameters, in a worker process.
type Factory func(params json.RawMessage) (*Built, error)

var (
	regMu    sync.Mutex
	registry = map[string]Factory{}
)

// Register makes a topology available to worker processes of this binary
// under name. Call it from an init function or main before Main runs.
func Register(name string, f Factory) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("workerproc: topology " + name + " registered twice")
	}
	registry[name] = f
}

func lookup(name string) (Factory, bool) {
	regMu.Lock()
	defer regMu.Unlock()
	f, ok := registry[name]
	return f, ok
}

func names() []string {
	regMu.Lock()
	defer regMu.Unlock()
	var ns []string
	for n := range registry {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// Message is one line between a worker and its launcher: a command
// (Cmd set) or an event (Event set).
type Message struct {
	Cmd     string   `json:"cmd,omitempty"`
	Workers []string `json:"workers,omitempty"` // start
	// Executors is the executor → worker map of start (gale.Assignment's);
	// nil: the even scheduler's.
	Executors []int `json:"executors,omitempty"`

	Event string `json:"event,omitempty"`
	Addr  string `json:"addr,omitempty"` // listening
	PID   int    `json:"pid,omitempty"`
	Error string `json:"error,omitempty"` // failed
	// Refused (failed): the worker failed because its peers refused its
	// hello for good: it holds another assignment than theirs (a stale
	// copy), or another topology, version or set of types.
	Refused bool            `json:"refused,omitempty"`
	Time    time.Time       `json:"time,omitzero"`
	Status  *worker.Status  `json:"status,omitempty"` // heartbeat, stopped
	RSS     int64           `json:"rss,omitempty"`
	Stats   json.RawMessage `json:"stats,omitempty"`
	// Process is the worker process's own use of the machine (heartbeat,
	// stopped).
	Process *Process `json:"process,omitempty"`
	// Spouts are this worker's spout counters (heartbeat, stopped).
	Spouts []metrics.Spout `json:"spouts,omitempty"`
	// Bolts are this worker's bolt counters (heartbeat, stopped).
	Bolts []metrics.Bolt `json:"bolts,omitempty"`

	// Supervised mode (Supervised documents it).
	Topology    string             `json:"topology,omitempty"`    // hello
	Port        int                `json:"port,omitempty"`        // hello
	Version     int64              `json:"version,omitempty"`     // hello, heartbeat, reassign, reassigned
	Fingerprint string             `json:"fingerprint,omitempty"` // hello, heartbeat, reassigned
	Active      *bool              `json:"active,omitempty"`      // hello, heartbeat
	Assignment  *worker.Assignment `json:"assignment,omitempty"`  // reassign
	NoDrain     bool               `json:"no_drain,omitempty"`    // stop: without the drain (Handle.StopNow)
}

// Commands and events.
const (
	CmdStart      = "start"
	CmdActivate   = "activate"
	CmdDeactivate = "deactivate"
	CmdStop       = "stop"
	CmdReassign   = "reassign" // supervised mode

	EventListening  = "listening"
	EventStarted    = "started"
	EventHeartbeat  = "heartbeat"
	EventStopped    = "stopped"
	EventFailed     = "failed"
	EventHello      = "hello"      // supervised mode
	EventReassigned = "reassigned" // supervised mode; Error set if refused
)

// Main runs one worker: it binds spec.Listen, reports the address, waits
// for the peers' addresses, starts its share of the topology and
// heartbeats until told to stop, stdin ends, or ctx is done. It closes
// stdin before returning. The returned error has also been reported as a
// "failed" event. It sets this process's memory settings from the
// worker's config (workermem.Of) for as long as it runs. With
// spec.Supervised set it runs under a supervisor instead, as Supervised
// describes, and does not read stdin.
func Main(ctx context.Context, spec Spec, stdin io.ReadCloser, stdout io.Writer, log *slog.Logger) (err error) {
	out := &eventWriter{w: stdout}
	defer func() {
		if err != nil {
			out.send(Message{Event: EventFailed, Error: err.Error()})
		}
	}()
	if err := spec.Validate(); err != nil {
		return err
	}
	factory, _ := lookup(spec.Factory)
	built, err := factory(spec.Params)
	if err != nil {
		return fmt.Errorf("build topology %q: %w", spec.Factory, err)
	}
	if built.Close != nil {
		defer built.Close()
	}
	conf := gale.Config{}
	for k, v := range built.Config {
		conf[k] = v
	}
	for k, v := range spec.Config {
		conf[k] = v
	}
	eff, err := config.Resolve(spec.Cluster, conf)
	if err != nil {
		return fmt.Errorf("worker %d: %w", spec.Worker, err)
	}
	// The process's memory settings come from the cluster's worker
	// settings (worker.gogc, worker.gc.floor.mb, worker.heap.pretouch,
	// worker.heap.memory.mb), applied before the worker reports its
	// address, so that its heap is pretouched before its launcher spawns
	// the next worker and long before its spouts activate.
	defer workermem.Of(eff).Apply()()
	ln, err := net.Listen("tcp", spec.Listen)
	if err != nil {
		return fmt.Errorf("worker %d: %w", spec.Worker, err)
	}
	defer ln.Close() // the worker owns it once it starts; closing again is harmless
	if err := out.send(Message{Event: EventListening, Addr: ln.Addr().String(), PID: os.Getpid()}); err != nil && spec.Supervised == nil {
		return err
	}
	if spec.Supervised != nil {
		stdin.Close()
		return runSupervised(ctx, spec, conf, eff, built, ln, log)
	}

	cmds := make(chan Message)
	readErr := make(chan error, 1)
	stopRead := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(stopRead); stdin.Close(); wg.Wait() }()
	wg.Go(func() { readErr <- readCommands(stdin, cmds, stopRead) })

	// Wait for the peers.
	var peers []string
	var execs []int
	for peers == nil {
		select {
		case m := <-cmds:
			if m.Cmd != CmdStart {
				return fmt.Errorf("worker %d: got %q before \"start\"", spec.Worker, m.Cmd)
			}
			if len(m.Workers) != spec.Workers {
				return fmt.Errorf("worker %d: \"start\" lists %d workers, the spec says %d", spec.Worker, len(m.Workers), spec.Workers)
			}
			peers, execs = m.Workers, m.Executors
		case err := <-readErr:
			return fmt.Errorf("worker %d: the launcher went away before \"start\": %v", spec.Worker, err)
		case <-ctx.Done():
			return nil
		}
	}
	w, err := bridge.StartWorker(spec.Topology, conf, built.Topology,
		worker.Assignment{Worker: spec.Worker, Workers: peers, Executors: execs},
		worker.Options{Logger: log, Listener: ln}, bridge.Hooks{})
	if err != nil {
		return err
	}
	if err := out.send(Message{Event: EventStarted}); err != nil {
		w.Stop()
		return err
	}
	metricsPort, stopMetrics := serveMetrics(eff, spec.Listen, spec.Topology, "", w, log)
	defer stopMetrics()
	procs := newProcessReader()
	beat := func(event string) error {
		st := w.Status()
		pr := procs.read()
		pr.MetricsPort = metricsPort
		m := Message{Event: event, Time: time.Now(), Status: &st, Spouts: bridge.SpoutStats(w), Bolts: bridge.BoltStats(w), Process: &pr}
		m.RSS, _ = procstat.RSS()
		if built.Stats != nil {
			if b, err := json.Marshal(built.Stats()); err == nil {
				m.Stats = b
			}
		}
		return out.send(m)
	}
	tk := time.NewTicker(time.Duration(spec.HeartbeatMS) * time.Millisecond)
	defer tk.Stop()
	var fatal error
loop:
	for {
		select {
		case <-tk.C:
			if beat(EventHeartbeat) != nil {
				break loop // stdout is gone: so is the launcher
			}
		case m := <-cmds:
			switch m.Cmd {
			case CmdActivate:
				w.Activate()
			case CmdDeactivate:
				w.Deactivate()
			case CmdStop:
				break loop
			default:
				log.Error("ignored an unknown command from the launcher", "cmd", m.Cmd)
			}
		case <-readErr:
			break loop
		case fatal = <-w.Failed():
			break loop
		case <-ctx.Done():
			break loop
		}
	}
	w.Stop()
	if fatal != nil {
		return fatal
	}
	beat(EventStopped)
	return nil
}

// readCommands reads command lines until stdin ends or stop closes.
func readCommands(r io.Reader, cmds chan<- Message, stop <-chan struct{}) error {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var m Message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m.Cmd == "" {
			m = Message{Cmd: fmt.Sprintf("unparseable line %q", sc.Text())}
		}
		select {
		case cmds <- m:
		case <-stop:
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return io.EOF
}

// eventWriter writes one JSON line per message.
type eventWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (e *eventWriter) send(m Message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, err = e.w.Write(append(b, '\n'))
	return err
}
