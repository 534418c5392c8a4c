//go:build unix

package transport

import (
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

// pollConn is how a Server reads a peer's connection: when the socket is
// empty it parks in the netpoller for a bounded time, so that a busy
// process still looks at the socket again soon.
//
// Why: a goroutine parked on a socket is woken by the netpoller, and a
// busy P consults the netpoller only when it runs out of goroutines to
// run, or when sysmon sees that none has for 10 ms. A worker with one P at
// a high rate is busy for long stretches, so the frames its peers sent
// (tuples, acks, and the credit grants the peers wait for) sat readable in
// the socket for up to 10 ms. A bounded park ends on a timer, and a P runs
// its due timers every time it schedules, busy or not. The bound starts at
// pollWaitMin and doubles while the socket stays empty, up to pollWaitMax,
// past which the reader parks for as long as the idle deadline allows:
// sysmon's 10 ms poll bounds that case anyway, and a quiet connection
// should not wake its process. An idle process is woken by the netpoller
// as soon as data arrives, bound or not.
//
// Measured in two workers at 300k sentences/s (docs/performance.md):
// p99 complete latency 4.42 ms against 5.78 ms with plain reads, medians
// of six interleaved pairs; p50 and CPU unchanged.
type pollConn struct {
	net.Conn
	rc syscall.RawConn
	// deadline is the read deadline the server set: it closes a peer
	// that stopped sending. The connection's own deadline is the bounded
	// park's.
	deadline time.Time
}

// Bounds of a park on an empty socket (see pollConn).
const (
	pollWaitMin = 50 * time.Microsecond
	pollWaitMax = 5 * time.Millisecond
)

// newPollConn wraps c if it is a socket; ok is false otherwise.
func newPollConn(c net.Conn) (pc *pollConn, ok bool) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, false
	}
	return &pollConn{Conn: c, rc: rc}, true
}

// SetReadDeadline sets the deadline for Read to fail with a timeout. It
// must not be called during a Read (the server sets it between reads).
func (c *pollConn) SetReadDeadline(t time.Time) error {
	c.deadline = t
	return nil
}

func (c *pollConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	wait := pollWaitMin
	for {
		var n int
		var rerr, armErr error
		err := c.rc.Read(func(fd uintptr) bool {
			n, rerr = syscall.Read(int(fd), p)
			if rerr != syscall.EAGAIN {
				return true
			}
			// Empty: park until readable or the bound, whichever first.
			d := c.deadline
			if wait <= pollWaitMax {
				if b := time.Now().Add(wait); d.IsZero() || b.Before(d) {
					d = b
				}
			}
			if armErr = c.Conn.SetReadDeadline(d); armErr != nil {
				return true
			}
			return false
		})
		switch {
		case armErr != nil:
			return 0, armErr
		case err != nil:
			if !os.IsTimeout(err) || (!c.deadline.IsZero() && !time.Now().Before(c.deadline)) {
				return 0, err // closed, or the server's deadline passed
			}
			// The bound passed with the socket still empty, or with data
			// a busy P had not polled for: look again.
			if err := c.Conn.SetReadDeadline(time.Time{}); err != nil {
				return 0, err
			}
			wait *= 2
		case rerr == syscall.EINTR:
		case rerr != nil:
			return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("read", rerr)}
		case n == 0:
			return 0, io.EOF
		default:
			return n, nil
		}
	}
}
