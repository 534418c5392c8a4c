package workerproc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/backoff"
	"github.com/gale-stream/gale/internal/bridge"
	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/countfile"
	"github.com/gale-stream/gale/internal/procstat"
	"github.com/gale-stream/gale/internal/scheduler"
	"github.com/gale-stream/gale/internal/transport"
	"github.com/gale-stream/gale/internal/worker"
)

// Supervised is the part of a spec that runs a worker under a supervisor
// (gale supervisor): the spec carries the whole assignment, so the worker
// starts at once, without a "start" command, listening on Spec.Listen
// (the slot's host:port). It talks to the supervisor over the unix socket
// Control, one JSON Message per line:
//
//	worker → supervisor  {"event":"hello","topology":ID,"port":…,"pid":…,"version":…,"fingerprint":…,"active":…}
//	worker → supervisor  {"event":"heartbeat",…} every Spec.HeartbeatMS, with status, spouts, rss, version
//	supervisor → worker  {"cmd":"activate"} | {"cmd":"deactivate"} | {"cmd":"stop"} | {"cmd":"stop","no_drain":true}
//	supervisor → worker  {"cmd":"reassign","version":…,"assignment":{…}}
//	worker → supervisor  {"event":"reassigned","version":…,"fingerprint":…} ("error" set if refused)
//	worker → supervisor  {"event":"stopped",…} (the last heartbeat), then exit 0
//	worker → supervisor  {"event":"failed","error":…,"refused":…}, then exit 1 ("refused": its peers refused its hello for good, a stale copy)
//
// The hello is sent again on every connection. If the socket breaks, or
// no supervisor listens, the worker keeps running and dials again, at
// least once a second: a restarted supervisor adopts it. SIGTERM and
// "stop" stop it in order (Handle.Stop); "stop" with no_drain does not
// wait for the in-flight trees (Handle.StopNow), for a topology killed
// after its wait. Its standard input is not read.
//
// Besides the periodic heartbeats, the worker heartbeats at once when it
// has connected to every peer and when its spouts see their first ack,
// so that its supervisor learns of both without waiting a period (it
// reports a worker's first ack to nimbus at once).
type Supervised struct {
	// TopologyID is the topology's id in the cluster (Spec.Topology is
	// its name).
	TopologyID string `json:"topology_id"`
	// Version is the assignment's version.
	Version int64 `json:"version"`
	// Port is the slot.
	Port int `json:"port"`
	// Active says whether the spouts start active.
	Active bool `json:"active"`
	// Control is the supervisor's unix socket.
	Control string `json:"control"`
	// Assignment is this worker's assignment; Spec.Worker and
	// Spec.Workers must agree with it.
	Assignment worker.Assignment `json:"assignment"`
	// Counts, if set, is the file (in the worker's directory) where the
	// worker's spout executors mirror their counters, mapped shared, so
	// that the supervisor reads what a worker killed with -9 counted
	// since its last heartbeat (internal/countfile). Empty: none.
	Counts string `json:"counts,omitempty"`
}

func (s *Supervised) validate(spec Spec) []error {
	var errs []error
	if s.TopologyID == "" {
		errs = append(errs, errors.New(`"supervised.topology_id" is empty`))
	}
	if s.Control == "" {
		errs = append(errs, errors.New(`"supervised.control" is empty: the supervisor's socket`))
	}
	if err := s.Assignment.Validate(); err != nil {
		errs = append(errs, fmt.Errorf(`"supervised.assignment": %w`, err))
	} else if s.Assignment.Worker != spec.Worker || len(s.Assignment.Workers) != spec.Workers {
		errs = append(errs, fmt.Errorf(`"supervised.assignment" places worker %d of %d, the spec says %d of %d`,
			s.Assignment.Worker, len(s.Assignment.Workers), spec.Worker, spec.Workers))
	}
	if _, port, err := net.SplitHostPort(spec.Listen); err == nil && port != strconv.Itoa(s.Port) {
		errs = append(errs, fmt.Errorf(`"listen" %q is not on the slot's port %d`, spec.Listen, s.Port))
	}
	return errs
}

// Fingerprint summarises a worker assignment: the peers' addresses in
// order and the executor map, as the workers' hellos do
// (scheduler.Assignment.Fingerprint with the worker indexes as slot ids).
func Fingerprint(a worker.Assignment) string {
	sa := scheduler.Assignment{Slots: make([]scheduler.Slot, len(a.Workers)), Executors: a.Executors}
	for i, addr := range a.Workers {
		sa.Slots[i] = scheduler.Slot{ID: strconv.Itoa(i), Addr: addr}
	}
	return sa.Fingerprint()
}

// firstAckPoll is how often a worker looks at its counters until its
// first ack (or until firstAckWatch has passed since its start), to
// heartbeat at once when the first ack comes.
const (
	firstAckPoll  = 20 * time.Millisecond
	firstAckWatch = 2 * time.Minute
)

// redial is the backoff of a supervised worker's control connection.
var redial = backoff.Doubling{Min: 50 * time.Millisecond, Max: time.Second}

// runSupervised runs a supervised worker once its listener is bound.
func runSupervised(ctx context.Context, spec Spec, conf gale.Config, eff *config.Effective, built *Built, ln net.Listener, log *slog.Logger) error {
	sv := spec.Supervised
	opts := worker.Options{Logger: log, Listener: ln}
	if sv.Counts != "" {
		var counts *countfile.File
		defer func() {
			if counts != nil {
				counts.Close() // after the worker has stopped
			}
		}()
		opts.SpoutMirrors = func(slots []worker.SpoutSlot) []worker.SpoutMirror {
			l := countfile.Layout{Topology: sv.TopologyID, PID: os.Getpid(), Assignment: sv.Version,
				Fingerprint: Fingerprint(sv.Assignment), Slots: make([]countfile.Slot, len(slots))}
			for i, s := range slots {
				l.Slots[i] = countfile.Slot{Component: s.Component, FirstTask: s.FirstTask}
			}
			f, err := countfile.Create(sv.Counts, l)
			if err != nil {
				if errors.Is(err, countfile.ErrUnsupported) {
					return nil
				}
				log.Warn("no counter file: the counts since the last heartbeat are lost if this worker is killed", "file", sv.Counts, "err", err)
				return nil
			}
			counts = f
			out := make([]worker.SpoutMirror, len(slots))
			for i := range out {
				out[i] = worker.SpoutMirror{Acked: f.Counter(i, 0), Failed: f.Counter(i, 1), Emitted: f.Counter(i, 2), Transferred: f.Counter(i, 3)}
			}
			return out
		}
	}
	w, err := bridge.StartWorker(spec.Topology, conf, built.Topology, sv.Assignment, opts, bridge.Hooks{})
	if err != nil {
		return err
	}
	active := sv.Active
	if !active {
		w.Deactivate()
	}
	link := &controlLink{path: sv.Control, log: log, cmds: make(chan Message, 16)}
	id := Message{Event: EventHello, Topology: sv.TopologyID, Port: sv.Port, PID: os.Getpid(),
		Version: sv.Version, Fingerprint: Fingerprint(sv.Assignment), Active: &active}
	link.setHello(id)
	// The link outlives ctx (SIGTERM) long enough to report "stopped".
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { link.run(lctx) })
	defer func() { cancel(); wg.Wait(); link.close() }()

	metricsPort, stopMetrics := serveMetrics(eff, spec.Listen, spec.Topology, sv.TopologyID, w, log)
	defer stopMetrics()
	procs := newProcessReader()
	beat := func(event string) {
		st := w.Status()
		a := active
		pr := procs.read()
		pr.MetricsPort = metricsPort
		m := Message{Event: event, Time: time.Now(), Status: &st, Spouts: bridge.SpoutStats(w), Bolts: bridge.BoltStats(w),
			Version: id.Version, Fingerprint: id.Fingerprint, Active: &a, Process: &pr}
		m.RSS, _ = procstat.RSS()
		if built.Stats != nil {
			if b, err := json.Marshal(built.Stats()); err == nil {
				m.Stats = b
			}
		}
		link.send(m)
	}
	tk := time.NewTicker(time.Duration(spec.HeartbeatMS) * time.Millisecond)
	defer tk.Stop()
	// Until the first ack: watch for every peer connected and the first
	// ack, log each once and heartbeat at once.
	started := time.Now()
	watch := time.NewTicker(firstAckPoll)
	defer watch.Stop()
	watchC := watch.C
	peersUp := spec.Workers <= 1
	if peersUp {
		log.Info("worker running: no peers to connect to")
	}
	var fatal error
	noDrain := false
loop:
	for {
		select {
		case <-tk.C:
			beat(EventHeartbeat)
		case <-watchC:
			if !peersUp && w.Status().PeersConnected >= spec.Workers-1 {
				peersUp = true
				log.Info("worker running: connected to every peer", "peers", spec.Workers-1, "since_start", time.Since(started))
				beat(EventHeartbeat)
			}
			var acked int64
			for _, sp := range bridge.SpoutStats(w) {
				acked += sp.Acked
			}
			switch {
			case acked > 0:
				log.Info("first trees acked", "acked", acked, "since_start", time.Since(started))
				beat(EventHeartbeat)
				watch.Stop()
				watchC = nil
			case time.Since(started) > firstAckWatch:
				watch.Stop()
				watchC = nil
			}
		case m := <-link.cmds:
			switch m.Cmd {
			case CmdActivate:
				w.Activate()
				active = true
			case CmdDeactivate:
				w.Deactivate()
				active = false
			case CmdReassign:
				reply := Message{Event: EventReassigned, Version: m.Version}
				switch {
				case m.Assignment == nil:
					reply.Error = `"reassign" carries no assignment`
				default:
					if err := w.Reassign(*m.Assignment); err != nil {
						reply.Error = err.Error()
					} else {
						id.Version, id.Fingerprint = m.Version, Fingerprint(*m.Assignment)
					}
				}
				reply.Fingerprint = id.Fingerprint
				link.send(reply)
			case CmdStop:
				noDrain = m.NoDrain
				break loop
			default:
				log.Error("ignored an unknown command from the supervisor", "cmd", m.Cmd)
			}
			a := active
			id.Active = &a
			link.setHello(id)
		case fatal = <-w.Failed():
			break loop
		case <-ctx.Done():
			break loop
		}
	}
	if noDrain {
		w.StopNow()
	} else {
		w.Stop()
	}
	if fatal != nil {
		link.send(Message{Event: EventFailed, Error: fatal.Error(), Refused: errors.Is(fatal, transport.ErrMismatch)})
		return fatal
	}
	beat(EventStopped)
	return nil
}

// controlLink is a supervised worker's connection to its supervisor,
// dialled again whenever it breaks. Commands arrive on cmds; send writes
// an event if connected and drops it otherwise (events are telemetry: the
// next heartbeat says it all again).
type controlLink struct {
	path string
	log  *slog.Logger
	cmds chan Message

	wmu sync.Mutex // held while writing a line
	mu  struct {
		sync.Mutex
		conn  net.Conn
		hello Message
	}
}

func (l *controlLink) setHello(m Message) {
	l.mu.Lock()
	l.mu.hello = m
	l.mu.Unlock()
}

// run dials, says hello and reads commands until ctx is done.
func (l *controlLink) run(ctx context.Context) {
	fails := 0
	var d net.Dialer
	for ctx.Err() == nil {
		c, err := d.DialContext(ctx, "unix", l.path)
		if err == nil {
			l.mu.Lock()
			l.mu.conn = c
			hello := l.mu.hello
			l.mu.Unlock()
			if l.send(hello) == nil {
				fails = 0
				l.read(ctx, c)
			}
			l.mu.Lock()
			l.mu.conn = nil
			l.mu.Unlock()
			c.Close()
		}
		select {
		case <-ctx.Done():
		case <-time.After(redial.Delay(fails + 1)):
		}
		fails++
	}
}

// read passes c's command lines on until c breaks or ctx is done.
func (l *controlLink) read(ctx context.Context, c net.Conn) {
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 64<<10), 16<<20) // a reassign carries the whole assignment
	for sc.Scan() {
		var m Message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m.Cmd == "" {
			l.log.Error("ignored an unparseable line from the supervisor", "line", sc.Text())
			continue
		}
		select {
		case l.cmds <- m:
		case <-ctx.Done():
			return
		}
	}
}

// send writes m if connected; a write that does not finish within a
// second breaks the connection.
func (l *controlLink) send(m Message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	l.mu.Lock()
	c := l.mu.conn
	l.mu.Unlock()
	if c == nil {
		return net.ErrClosed
	}
	// Writes come from the worker's loop and from run's hello: one at a
	// time keeps the lines whole.
	l.wmu.Lock()
	defer l.wmu.Unlock()
	c.SetWriteDeadline(time.Now().Add(time.Second))
	if _, err := c.Write(append(b, '\n')); err != nil {
		c.Close()
		return err
	}
	return nil
}

func (l *controlLink) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.conn != nil {
		l.mu.conn.Close()
	}
}
