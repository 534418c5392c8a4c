package transport

import (
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gale-stream/gale/internal/testutil"
)

// Redirect moves a sender to its peer's new address with a new hello:
// the old connection is dropped, the frames sent from then on reach the
// new listener, which sees the new hello, and none go to the old one.
func TestSenderRedirect(t *testing.T) {
	for _, tc := range []struct {
		name    string
		oldDown bool // the old peer has gone, and the sender is retrying it
	}{
		{"connected", false},
		{"while retrying a peer that is gone", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lg := newLogs()
			oldRec, newRec := newReceived(), newReceived()
			var oldClosed atomic.Int64
			oldSrv, err := Listen("127.0.0.1:0", ServerConfig{Hello: hello("b"), Handler: oldRec.handle, Logger: lg.logger(),
				OnClose: func(*ServerConn) { oldClosed.Add(1) }})
			if err != nil {
				t.Fatal(err)
			}
			defer oldSrv.Close()
			moved := hello("b")
			moved.Assignment = "as-2"
			opened := make(chan Hello, 4)
			newSrv := listen(t, "127.0.0.1:0", ServerConfig{Hello: moved, Handler: newRec.handle, Logger: lg.logger(),
				OnOpen: func(c *ServerConn) { opened <- c.Peer() }})
			snd := NewSender(SenderConfig{Hello: hello("a"), Addr: oldSrv.Addr(), Logger: lg.logger(), MaxBackoff: time.Second,
				OnRefused: func(err error) { t.Errorf("refused: %v", err) }})
			defer snd.Close()
			sendData(t, snd, 0, 10)
			oldRec.waitFor(t, FrameData, 10)
			if tc.oldDown {
				oldSrv.Close()
				testutil.Eventually(t, 10*time.Second, "the sender sees its peer gone", func() bool { return !snd.Connected() })
			}
			newHello := hello("a")
			newHello.Assignment = "as-2"
			snd.Redirect(newSrv.Addr(), newHello)
			if got := snd.Addr(); got != newSrv.Addr() {
				t.Errorf("Addr() = %s after the redirect, want %s", got, newSrv.Addr())
			}
			if p := recv(t, opened, "the new listener's connection"); p != newHello {
				t.Errorf("the new listener saw the hello %+v, want %+v", p, newHello)
			}
			testutil.Eventually(t, 10*time.Second, "the old connection closed", func() bool { return oldClosed.Load() == 1 })
			sendData(t, snd, 10, 20)
			got := newRec.waitFor(t, FrameData, 10)
			for i, f := range got {
				if v := binary.BigEndian.Uint32(f.payload); v != uint32(10+i) {
					t.Fatalf("frame %d at the new listener carries %d, want %d", i, v, 10+i)
				}
			}
			if n := len(oldRec.waitFor(t, FrameData, 10)); n != 10 {
				t.Errorf("the old listener got %d data frames, want the 10 sent before the redirect", n)
			}
		})
	}
}

// A redirect under way abandons a connection attempt to the old address,
// even one that would end in a permanent refusal: the sender does not
// stop, and connects to the new address.
func TestSenderRedirectAbandonsOldAttempt(t *testing.T) {
	// The old address answers only once told to, with a refusal.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer ln.Close()
	wg.Go(func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	})
	rec := newReceived()
	srv := listen(t, "127.0.0.1:0", ServerConfig{Hello: hello("b"), Handler: rec.handle, Logger: newLogs().logger()})
	refused := make(chan error, 1)
	snd := NewSender(SenderConfig{Hello: hello("a"), Addr: ln.Addr().String(), Logger: newLogs().logger(), MaxBackoff: 5 * time.Second,
		OnRefused: func(err error) { refused <- err }})
	defer snd.Close()
	old := recv(t, accepted, "the first attempt")
	defer old.Close()
	snd.Redirect(srv.Addr(), hello("a"))
	old.Write(encodeFrames(t, 0, frame{FrameRefuse, appendRefusal(nil, true, "stale")}))
	sendData(t, snd, 0, 5)
	rec.waitFor(t, FrameData, 5)
	select {
	case err := <-refused:
		t.Fatalf("the sender gave up on a refusal from the address it left: %v", err)
	default:
	}
}

// After SetHello a listener checks hellos against the new one: a dialer
// still holding the old assignment is refused for good, one with the new
// is accepted, and the connections already open stay open.
func TestServerSetHello(t *testing.T) {
	rec := newReceived()
	srv := listen(t, "127.0.0.1:0", ServerConfig{Hello: hello("b"), Handler: rec.handle, Logger: newLogs().logger()})
	first := NewSender(SenderConfig{Hello: hello("a"), Addr: srv.Addr(), Logger: newLogs().logger()})
	defer first.Close()
	sendData(t, first, 0, 1)
	rec.waitFor(t, FrameData, 1)

	moved := hello("b")
	moved.Assignment = "as-2"
	srv.SetHello(moved)
	refused := make(chan error, 1)
	stale := NewSender(SenderConfig{Hello: hello("c"), Addr: srv.Addr(), Logger: newLogs().logger(), OnRefused: func(err error) { refused <- err }})
	defer stale.Close()
	err := recv(t, refused, "the stale dialer's refusal")
	var re *RefusedError
	if !errors.As(err, &re) || !re.Permanent || !strings.Contains(re.Reason, `worker "c" holds assignment "", worker "b" holds "as-2"`) {
		t.Fatalf("the stale dialer: %v, want a permanent refusal for its assignment", err)
	}
	fresh := hello("d")
	fresh.Assignment = "as-2"
	current := NewSender(SenderConfig{Hello: fresh, Addr: srv.Addr(), Logger: newLogs().logger()})
	defer current.Close()
	sendData(t, current, 1, 2)
	sendData(t, first, 2, 3)
	rec.waitFor(t, FrameData, 3)
	if !first.Connected() {
		t.Error("the connection made before SetHello was dropped")
	}
}

// A dialer with a newer assignment than the listener's is refused only
// until the listener is reassigned: it retries, without OnRefused, and
// connects once the listener holds the same assignment. One with an older
// assignment is refused for good.
func TestNewerAssignmentWaits(t *testing.T) {
	lg := newLogs()
	rec := newReceived()
	srvHello := hello("b")
	srvHello.Assignment, srvHello.AssignmentVersion = "as-1", 1
	srv := listen(t, "127.0.0.1:0", ServerConfig{Hello: srvHello, Handler: rec.handle, Logger: lg.logger()})
	newer := hello("a")
	newer.Assignment, newer.AssignmentVersion = "as-2", 2
	snd := NewSender(SenderConfig{Hello: newer, Addr: srv.Addr(), Logger: lg.logger(), MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond,
		OnRefused: func(err error) { t.Errorf("the newer dialer gave up: %v", err) }})
	defer snd.Close()
	sendData(t, snd, 0, 3)
	lg.wait(t, "cannot connect to a peer worker; retrying", "newer than worker")
	srvHello.Assignment, srvHello.AssignmentVersion = "as-2", 2
	srv.SetHello(srvHello)
	rec.waitFor(t, FrameData, 3)

	refused := make(chan error, 1)
	older := hello("c")
	older.Assignment, older.AssignmentVersion = "as-1", 1
	stale := NewSender(SenderConfig{Hello: older, Addr: srv.Addr(), Logger: newLogs().logger(), OnRefused: func(err error) { refused <- err }})
	defer stale.Close()
	if err := recv(t, refused, "the older dialer's refusal"); !errors.Is(err, ErrMismatch) {
		t.Errorf("the older dialer: %v, want a mismatch", err)
	}
}
