package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// A drain is how a machine leaves the cluster for good: asked over
// DrainSocket (Drain, `gale supervisor drain`), the supervisor revokes
// its lease, so that nimbus moves its workers to other supervisors at
// once, as for a lost machine; it starts no worker from then on, and
// stops each of its workers as the new assignments withdraw it from
// here. Once none runs and no assignment names it, it is drained: it
// stays up, out of the cluster and idle, until it is stopped. Started
// again, it joins the cluster again. A stop without a drain (SIGTERM,
// kill -9) leaves the lease to its TTL instead, and the workers running:
// a restart within nimbus.supervisor.timeout.secs adopts them.

// DrainSocket is the unix socket under a supervisor's directory that
// takes a drain request and answers with its progress (Drain).
func DrainSocket(dir string) string { return filepath.Join(dir, "drain.sock") }

// drainRequest is the line a drain's client sends.
const drainRequest = "drain"

// DrainStatus is a drain's progress, as the supervisor reports it.
type DrainStatus struct {
	Supervisor string `json:"supervisor"`
	// Left: the supervisor has left the cluster (its lease revoked, so
	// nimbus has moved or is moving its workers).
	Left bool `json:"left"`
	// Drained: it has left, none of its workers runs and no assignment
	// names it. It stays up, idle, until stopped.
	Drained bool `json:"drained"`
	// Workers are its slots still taken or still assigned to it.
	Workers []WorkerState `json:"workers,omitempty"`
}

// drainProgress is the latest DrainStatus, and a channel closed when it
// changes, for the drain socket's connections.
type drainProgress struct {
	st      DrainStatus
	changed chan struct{}
}

// publishDrain makes the drain's progress the current one, waking the
// drain socket's connections if it changed. Run's loop calls it.
func (s *Supervisor) publishDrain() {
	st := DrainStatus{Supervisor: s.cfg.ID, Left: s.draining}
	live := false
	for _, p := range s.procs {
		live = live || p.Alive
	}
	for _, w := range s.states {
		if w.State == Exited {
			continue
		}
		if (w.State == Valid || w.State == Starting) && w.Why == "" {
			w.Why = "still assigned here: nimbus moves it to a free slot elsewhere (with none free, it stays)"
		}
		st.Workers = append(st.Workers, w)
	}
	st.Drained = s.draining && s.known && !live && len(s.desired) == 0
	if st.Drained && !s.drainMu.cur.st.Drained {
		s.log.Info("supervisor drained: no worker runs here and none is assigned here; it stays out of the cluster until stopped")
	}
	s.drainMu.Lock()
	defer s.drainMu.Unlock()
	if sameDrain(s.drainMu.cur.st, st) {
		return
	}
	close(s.drainMu.cur.changed)
	s.drainMu.cur = drainProgress{st: st, changed: make(chan struct{})}
}

func sameDrain(a, b DrainStatus) bool {
	return a.Left == b.Left && a.Drained == b.Drained && slices.Equal(a.Workers, b.Workers)
}

func (s *Supervisor) drainState() drainProgress {
	s.drainMu.Lock()
	defer s.drainMu.Unlock()
	return s.drainMu.cur
}

// serveDrain takes drain requests on ln until it is closed: each
// connection's first line asks for the drain, and the connection then
// gets the progress, a JSON DrainStatus per line at each change, until
// drained. Its connections' goroutines are on wg and end with ctx.
func (s *Supervisor) serveDrain(ctx context.Context, ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		s.wg.Go(func() { s.drainConn(ctx, c) })
	}
}

func (s *Supervisor) drainConn(ctx context.Context, c net.Conn) {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(io.LimitReader(c, 64))
	line, err := r.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != drainRequest {
		return
	}
	c.SetReadDeadline(time.Time{})
	select { // a request already pending is the same request
	case s.drainReq <- struct{}{}:
	default:
	}
	// The client's end closing ends the wait.
	gone := make(chan struct{})
	s.wg.Go(func() {
		io.Copy(io.Discard, c)
		close(gone)
	})
	var sent *DrainStatus
	for {
		cur := s.drainState()
		if cur.st.Left && (sent == nil || !sameDrain(*sent, cur.st)) {
			b, _ := json.Marshal(cur.st)
			c.SetWriteDeadline(time.Now().Add(time.Second))
			if _, err := c.Write(append(b, '\n')); err != nil {
				return
			}
			st := cur.st
			sent = &st
			if st.Drained {
				return
			}
		}
		select {
		case <-cur.changed:
		case <-gone:
			return
		case <-ctx.Done():
			return
		}
	}
}

// Drain asks the supervisor running in dir to drain (see DrainSocket),
// and calls progress with each change of the drain's progress until the
// supervisor is drained, ctx is done, or the supervisor stops. A drain
// once asked goes on when Drain returns early.
func Drain(ctx context.Context, dir string, progress func(DrainStatus)) error {
	sock := DrainSocket(dir)
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return fmt.Errorf("supervisor: no supervisor answers on %s (is one running with --dir %s?): %w", sock, dir, err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if _, err := io.WriteString(c, drainRequest+"\n"); err != nil {
		return fmt.Errorf("supervisor: ask %s to drain: %w", sock, err)
	}
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var st DrainStatus
		if err := json.Unmarshal(sc.Bytes(), &st); err != nil {
			return fmt.Errorf("supervisor: the drain's progress from %s: %w", sock, err)
		}
		progress(st)
		if st.Drained {
			return nil
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err := sc.Err(); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("supervisor: the drain's progress from %s: %w", sock, err)
	}
	return fmt.Errorf("supervisor: the supervisor in %s stopped before it was drained; started again, it joins the cluster again", dir)
}
