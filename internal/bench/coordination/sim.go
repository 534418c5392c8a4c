package coordination

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/nimbus"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// supervisor is one simulated supervisor: a membership and a reporter.
type supervisor struct {
	rec    coord.Supervisor
	m      *coord.Membership
	client nimbuspb.NimbusClient
	// stop ends its reporter; done closes when it has.
	stop context.CancelFunc
	done chan struct{}
}

// newSupervisor is supervisor i's record: id sim-NNNNN on host 10.x.y.z,
// with ports 6700 and up.
func newSupervisor(i, ports int, galeVersion string, wireVersion int) coord.Supervisor {
	rec := coord.Supervisor{
		ID:          fmt.Sprintf("sim-%05d", i),
		Host:        fmt.Sprintf("10.%d.%d.%d", (i>>16)&255, (i>>8)&255, i&255),
		GOOS:        goos,
		GOARCH:      goarch,
		GaleVersion: galeVersion,
		WireVersion: wireVersion,
		Started:     time.Now(),
	}
	for p := range ports {
		rec.Ports = append(rec.Ports, 6700+p)
	}
	return rec
}

// counters are what the supervisors' reports cost and how they went;
// safe for concurrent use.
type counters struct {
	reports    atomic.Int64 // answered without error
	failures   atomic.Int64 // answered with an error
	protoBytes atomic.Int64 // proto.Size of every request sent
	workers    atomic.Int64 // worker summaries in the requests sent
	firstErr   atomic.Pointer[string]
	// wireOut and wireIn are the bytes written to and read from the
	// report connections' TCP sockets: gRPC and HTTP/2 framing, headers
	// and control frames included.
	wireOut, wireIn atomic.Int64
}

type snapshot struct {
	reports, failures, protoBytes, workers, wireOut, wireIn int64
}

func (c *counters) snapshot() snapshot {
	return snapshot{c.reports.Load(), c.failures.Load(), c.protoBytes.Load(), c.workers.Load(), c.wireOut.Load(), c.wireIn.Load()}
}

func (s snapshot) sub(o snapshot) snapshot {
	return snapshot{s.reports - o.reports, s.failures - o.failures, s.protoBytes - o.protoBytes,
		s.workers - o.workers, s.wireOut - o.wireOut, s.wireIn - o.wireIn}
}

// countingConn counts the bytes that cross a connection.
type countingConn struct {
	net.Conn
	c *counters
}

func (cc countingConn) Read(b []byte) (int, error) {
	n, err := cc.Conn.Read(b)
	cc.c.wireIn.Add(int64(n))
	return n, err
}

func (cc countingConn) Write(b []byte) (int, error) {
	n, err := cc.Conn.Write(b)
	cc.c.wireOut.Add(int64(n))
	return n, err
}

// dialCounted is a gRPC connection to addr whose TCP bytes go to c.
func dialCounted(addr string, c *counters) (*grpc.ClientConn, error) {
	var d net.Dialer
	return grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			conn, err := d.DialContext(ctx, "tcp", a)
			if err != nil {
				return nil, err
			}
			return countingConn{Conn: conn, c: c}, nil
		}))
}

// slotWorker is a worker a supervisor's slot runs, by the assignments.
type slotWorker struct {
	topology    string
	port        int
	fingerprint string
}

// view is the assignments in etcd as last read, with the slots of each
// supervisor; safe for concurrent use.
type view struct {
	mu struct {
		sync.Mutex
		asgs    []coord.Assignment
		slots   map[string][]slotWorker // supervisor id → its workers
		at      time.Time               // when they were read
		changed chan struct{}           // closed on the next read
	}
}

func newView() *view {
	v := &view{}
	v.mu.changed = make(chan struct{})
	return v
}

// watch reads the assignments on every change until ctx is done.
func (v *view) watch(ctx context.Context, s *coord.Store, log *lineWriter) {
	for range s.Changes(ctx, coord.AssignmentsPrefix) {
		asgs, err := s.Assignments(ctx)
		if err != nil {
			if ctx.Err() == nil {
				log.printf("gale bench coordination: read the assignments: %v (trying again on the next change)", err)
			}
			continue
		}
		v.set(asgs, time.Now())
	}
}

func (v *view) set(asgs []coord.Assignment, at time.Time) {
	slots := make(map[string][]slotWorker)
	for _, a := range asgs {
		fp := nimbus.Fingerprint(a) // as the workers compute it for their hellos
		for _, w := range a.Workers {
			slots[w.Supervisor] = append(slots[w.Supervisor], slotWorker{topology: a.Topology, port: w.Port, fingerprint: fp})
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.mu.asgs, v.mu.slots, v.mu.at = asgs, slots, at
	close(v.mu.changed)
	v.mu.changed = make(chan struct{})
}

// get returns the assignments, when they were read, and a channel closed
// on the next read.
func (v *view) get() ([]coord.Assignment, time.Time, <-chan struct{}) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.mu.asgs, v.mu.at, v.mu.changed
}

func (v *view) workersOf(sup string) []slotWorker {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.mu.slots[sup]
}

// await waits until ok holds for the assignments and returns them with
// the time they were read.
func (v *view) await(ctx context.Context, ok func([]coord.Assignment) bool) ([]coord.Assignment, time.Time, error) {
	for {
		asgs, at, changed := v.get()
		if ok(asgs) {
			return asgs, at, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, time.Time{}, ctx.Err()
		}
	}
}

// find returns topology id's assignment.
func find(asgs []coord.Assignment, id string) (coord.Assignment, bool) {
	i := slices.IndexFunc(asgs, func(a coord.Assignment) bool { return a.Topology == id })
	if i < 0 {
		return coord.Assignment{}, false
	}
	return asgs[i], true
}

// workerState is the counters one simulated worker reports.
type workerState struct {
	pid                                   int32
	emitted, acked, failed, timedOut, rss int64
	topology, fingerprint                 string
}

// report sends s's summary of its workers every period until ctx is
// done, the first after a random part of a period so that the
// supervisors' reports spread over it.
func report(ctx context.Context, s *supervisor, v *view, period time.Duration, c *counters, seed uint64) {
	defer close(s.done)
	rnd := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	workers := make(map[int]*workerState) // port → its state
	nextPID := int32(10000 + rnd.IntN(20000))
	tm := time.NewTimer(time.Duration(rnd.Int64N(int64(period))))
	defer tm.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tm.C:
		}
		tm.Reset(period)
		req := &nimbuspb.ReportRequest{Supervisor: s.rec.ID}
		now := time.Now()
		mine := v.workersOf(s.rec.ID)
		for port := range workers {
			if !slices.ContainsFunc(mine, func(sw slotWorker) bool { return sw.port == port }) {
				delete(workers, port) // its worker was stopped
			}
		}
		for _, sw := range mine {
			w := workers[sw.port]
			if w == nil || w.topology != sw.topology {
				// A new worker in the slot: a new process, counting from 0.
				nextPID++
				w = &workerState{pid: nextPID, topology: sw.topology, rss: 48<<20 + rnd.Int64N(32<<20)}
				workers[sw.port] = w
			}
			w.fingerprint = sw.fingerprint
			// A few thousand tuples a second each, nearly all acked.
			n := int64(period.Seconds() * float64(1000+rnd.IntN(4000)))
			failed := rnd.Int64N(n/1000 + 1)
			w.emitted += n
			w.acked += n - failed
			w.failed += failed
			if rnd.IntN(100) == 0 {
				w.timedOut++
			}
			w.rss += rnd.Int64N(1<<20) - 1<<19
			req.Workers = append(req.Workers, &nimbuspb.WorkerReport{
				Topology: w.topology, Port: int32(sw.port), Pid: w.pid, State: "valid",
				AssignmentFingerprint: w.fingerprint,
				Emitted:               w.emitted, Acked: w.acked, Failed: w.failed, TimedOut: w.timedOut,
				Pending: rnd.Int64N(500), RssBytes: w.rss, HeartbeatUnixMs: now.UnixMilli(),
				Supervisor: s.rec.ID, Host: s.rec.Host,
			})
		}
		c.protoBytes.Add(int64(proto.Size(req)))
		c.workers.Add(int64(len(req.Workers)))
		rctx, cancel := context.WithTimeout(ctx, period)
		_, err := s.client.Report(rctx, req)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			c.failures.Add(1)
			msg := err.Error()
			c.firstErr.CompareAndSwap(nil, &msg)
		default:
			c.reports.Add(1)
		}
	}
}
