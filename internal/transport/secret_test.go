package transport

import (
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var testSecret = []byte("0123456789abcdef0123456789abcdef")

// Two workers that hold the same secret prove it to each other and
// exchange frames; each sees the other's hello.
func TestSecretSameWorks(t *testing.T) {
	rec, lg := newReceived(), newLogs()
	opened := make(chan Hello, 1)
	srv := listen(t, "127.0.0.1:0", ServerConfig{Hello: hello("b"), Secret: testSecret, Handler: rec.handle, Logger: lg.logger(),
		OnOpen: func(c *ServerConn) { opened <- c.Peer() }})
	snd := NewSender(SenderConfig{Hello: hello("a"), Secret: testSecret, Addr: srv.Addr(), Logger: lg.logger(),
		OnRefused: func(err error) { t.Errorf("refused: %v", err) }})
	defer snd.Close()
	sendData(t, snd, 0, 100)
	rec.waitFor(t, FrameData, 100)
	if p := recv(t, opened, "OnOpen"); p.Worker != "a" || len(p.Nonce) != nonceLen || p.Proof != "" {
		t.Errorf("the listener saw the hello %+v, want worker a's with a nonce and no proof", p)
	}
}

// Workers that do not hold the same secret refuse each other for good,
// whichever side holds which, with a reason saying the peer does not
// prove the secret (or holds one the other does not), and exchange
// nothing.
func TestSecretMismatchRefused(t *testing.T) {
	other := []byte("another topology's secret")
	tests := []struct {
		name           string
		server, sender []byte
		byPeer         bool // the listener refuses, rather than the dialer
		reason         string
	}{
		{"another secret", testSecret, other, false, `worker "b" does not prove the topology's secret: is it a worker of another topology or an old assignment? (its proof is wrong`},
		{"no secret on the dialer", testSecret, nil, true, `worker "a" does not prove the topology's secret: is it a worker of another topology or an old assignment?`},
		{"no secret on the listener", nil, testSecret, true, `worker "a" proves a topology secret, and worker "b" holds none`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opened atomic.Int64
			srv := listen(t, "127.0.0.1:0", ServerConfig{Hello: hello("b"), Secret: tt.server, Logger: newLogs().logger(),
				Handler: func(*ServerConn, FrameKind, []byte) {}, OnOpen: func(*ServerConn) { opened.Add(1) }})
			refused := make(chan error, 1)
			snd := NewSender(SenderConfig{Hello: hello("a"), Secret: tt.sender, Addr: srv.Addr(), Logger: newLogs().logger(),
				MinBackoff: time.Millisecond, OnRefused: func(err error) { refused <- err }})
			defer snd.Close()
			err := recv(t, refused, "OnRefused")
			var re *RefusedError
			if !errors.As(err, &re) || !re.Permanent || re.ByPeer != tt.byPeer || !strings.Contains(re.Reason, tt.reason) || !errors.Is(err, ErrMismatch) {
				t.Fatalf("OnRefused(%v), want a permanent refusal (by the peer: %v) saying %q", err, tt.byPeer, tt.reason)
			}
			if n := opened.Load(); n != 0 {
				t.Errorf("the listener opened %d connections from a dialer that does not prove its secret", n)
			}
		})
	}
}

// A hostile client on the listener's port, which does not hold the
// secret, cannot get a connection opened however it forges the
// handshake: each attempt gets a permanent refusal saying what is wrong,
// and no frame of it reaches the handler.
func TestSecretHostileClientRefused(t *testing.T) {
	var opened, frames atomic.Int64
	lg := newLogs()
	srv := listen(t, "127.0.0.1:0", ServerConfig{Hello: hello("b"), Secret: testSecret, Logger: lg.logger(),
		Handler: func(*ServerConn, FrameKind, []byte) { frames.Add(1) }, OnOpen: func(*ServerConn) { opened.Add(1) }})
	const noProof = `does not prove the topology's secret: is it a worker of another topology or an old assignment?`
	withNonce := hello("a")
	withNonce.Nonce = "0123456789abcdef"
	tests := []struct {
		name   string
		hello  Hello
		second func(listener Hello) frame // nil: none, the listener must refuse the hello
		reason string
	}{
		{"a hello without a nonce", hello("a"), nil, noProof},
		{"a hello that claims a proof", func() Hello { h := hello("a"); h.Proof = strings.Repeat("p", 32); return h }(), nil, noProof},
		{"a forged proof", withNonce, func(Hello) frame { return frame{FrameProof, []byte(strings.Repeat("\x42", 32))} }, "its proof is wrong"},
		{"an empty proof", withNonce, func(Hello) frame { return frame{FrameProof, []byte{}} }, "its proof is wrong"},
		{"the listener's own proof sent back", withNonce, func(l Hello) frame { return frame{FrameProof, []byte(l.Proof)} }, "its proof is wrong"},
		{"a proof replayed from another connection", withNonce, func(Hello) frame {
			// The right secret and hello, but another connection's challenge.
			return frame{FrameProof, []byte(prove(testSecret, roleDialer, withNonce, "an old challenge"))}
		}, "its proof is wrong"},
		{"data in place of the proof", withNonce, func(Hello) frame { return frame{FrameData, []byte{1, 2, 3}} }, "sent a data frame where its proof belongs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("tcp", srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := c.Write(encodeFrames(t, 0, frame{FrameHello, AppendHello(nil, tt.hello)})); err != nil {
				t.Fatal(err)
			}
			fr := NewFrameReader(c, 0)
			kind, payload, err := fr.Read()
			if err != nil {
				t.Fatal(err)
			}
			if tt.second != nil {
				if kind != FrameHello {
					t.Fatalf("the listener answered a hello with a nonce with a %s frame, want its hello", kind)
				}
				l, err := ParseHello(payload)
				if err != nil {
					t.Fatal(err)
				}
				if err := checkProof(testSecret, roleListener, l, withNonce.Nonce, l.Proof); err != nil || len(l.Nonce) != nonceLen {
					t.Fatalf("the listener's hello does not prove the secret for this challenge: %v", err)
				}
				if _, err := c.Write(encodeFrames(t, 0, tt.second(l))); err != nil {
					t.Fatal(err)
				}
				if kind, payload, err = fr.Read(); err != nil {
					t.Fatal(err)
				}
			}
			if kind != FrameRefuse {
				t.Fatalf("the listener answered with a %s frame, want a refusal", kind)
			}
			re := parseRefusal(srv.Addr(), payload)
			if !re.Permanent || !strings.Contains(re.Reason, tt.reason) {
				t.Fatalf("refusal %+v, want a permanent one saying %q", re, tt.reason)
			}
			// Frames sent after the refusal go nowhere: the listener has
			// closed the connection.
			c.Write(encodeFrames(t, 0, frame{FrameData, binary.BigEndian.AppendUint32(nil, 1)}))
			if _, _, err := fr.Read(); err == nil {
				t.Fatal("the connection stayed open after the refusal")
			}
		})
	}
	if o, f := opened.Load(), frames.Load(); o != 0 || f != 0 {
		t.Errorf("the hostile client got %d connections opened and %d frames handled, want none", o, f)
	}
	// Every refusal was logged on the listener's side too.
	lg.wait(t, "refused a worker connection", "does not prove the topology's secret")
}
