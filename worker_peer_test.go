package gale_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/bridge"
	"github.com/gale-stream/gale/internal/ratelog"
	"github.com/gale-stream/gale/internal/transport"
	"github.com/gale-stream/gale/internal/worker"
)

// twoComponents is a spout on worker 0 and a bolt with parallelism n
// after it, its first task on worker 1.
func twoComponents(t *testing.T, n int) *gale.Topology {
	b := gale.NewTopologyBuilder()
	b.SetSpout("a", func() gale.Spout {
		return &funcSpout{declare: func(d gale.OutputDeclarer) { d.Declare("v") }}
	}, 1)
	b.SetBolt("b", func() gale.Bolt { return &funcBolt{} }, n).ShuffleGrouping("a")
	return build(t, b)
}

// Two workers started with different topologies refuse each other at the
// hello: each fails through Failed with an error that says why, rather
// than retrying forever, so that its process exits and is restarted.
func TestWorkersFailWhenRefused(t *testing.T) {
	var lns [2]net.Listener
	var addrs []string
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
		addrs = append(addrs, ln.Addr().String())
	}
	var ws []worker.Handle
	for i, topo := range []*gale.Topology{twoComponents(t, 1), twoComponents(t, 2)} {
		w, err := bridge.StartWorker("test", gale.Config{}, topo, worker.Assignment{Worker: i, Workers: addrs},
			worker.Options{Logger: testLogger(t).With("worker", i), Listener: lns[i]}, bridge.Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		ws = append(ws, w)
	}
	for i, w := range ws {
		select {
		case err := <-w.Failed():
			if !errors.Is(err, transport.ErrMismatch) || !strings.Contains(err.Error(), "runs topology") ||
				!strings.Contains(err.Error(), "cannot work with peer worker") {
				t.Errorf("worker %d failed with %v, want the topology mismatch", i, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("worker %d did not fail in 10 s although its peer runs another topology", i)
		}
	}
}

// fakePeer plays worker 1 of two: it learns worker 0's hello from worker
// 0's own connection to it, answers it, and dials worker 0 as worker 1.
type fakePeer struct {
	ln    net.Listener
	hello chan transport.Hello
	wg    sync.WaitGroup
}

func newFakePeer(t *testing.T) *fakePeer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakePeer{ln: ln, hello: make(chan transport.Hello, 1)}
	t.Cleanup(func() { ln.Close(); f.wg.Wait() })
	f.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.wg.Go(func() {
				defer c.Close()
				fr := transport.NewFrameReader(c, 0)
				kind, payload, err := fr.Read()
				if err != nil || kind != transport.FrameHello {
					return
				}
				h, err := transport.ParseHello(payload)
				if err != nil {
					t.Errorf("worker 0's hello: %v", err)
					return
				}
				select {
				case f.hello <- h:
				default:
				}
				h.Worker = "1"
				fw := transport.NewFrameWriter(c, 0)
				if fw.Write(transport.FrameHello, transport.AppendHello(nil, h)) != nil || fw.Flush() != nil {
					return
				}
				for {
					if _, _, err := fr.Read(); err != nil {
						return // worker 0 stopped
					}
				}
			})
		}
	})
	return f
}

// errorLines collects the messages logged at ERROR or above.
func errorLines(t *testing.T) (*slog.Logger, func() []string) {
	var mu sync.Mutex
	var errs []string
	log := slog.New(captureLogs{testLogger(t).Handler(), &mu, &errs})
	return log, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), errs...)
	}
}

// A backpressure frame that does not parse, or that grants credit for an
// executor the peer does not run, closes the peer's connection, as a bad
// data frame does; a thousand of them log a handful of lines.
func TestWorkerClosesOnMalformedCredit(t *testing.T) {
	for _, tt := range []struct {
		name    string
		payload []byte
		log     string
	}{
		{"garbage", []byte{0xff}, "bad count"},
		{"executor out of range", transport.AppendCredits(nil, []transport.Credit{{Dest: 1000, N: 1}}), "destination 1000"},
		// Executor 0 is the spout, on worker 0.
		{"executor the peer does not run", transport.AppendCredits(nil, []transport.Credit{{Dest: 0, N: 1}}), "credit for executor 0, which worker 1 does not run"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFakePeer(t)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			log, errs := errorLines(t)
			w, err := bridge.StartWorker("test", gale.Config{}, twoComponents(t, 1),
				worker.Assignment{Worker: 0, Workers: []string{ln.Addr().String(), fake.ln.Addr().String()}},
				worker.Options{Logger: log, Listener: ln}, bridge.Hooks{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			var h transport.Hello
			select {
			case h = <-fake.hello:
			case <-time.After(10 * time.Second):
				t.Fatal("worker 0 did not dial its peer")
			}
			h.Worker = "1"
			c, fr, fw := dialWorker(t, ln.Addr().String(), h)
			// 1000 bad frames, written while worker 0 reads; it may close the
			// connection after the first, so a write may fail.
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var wg sync.WaitGroup
			defer wg.Wait()
			wg.Go(func() {
				for range 1000 {
					if ctx.Err() != nil || fw.Write(transport.FrameBackpressure, tt.payload) != nil {
						return
					}
				}
				fw.Flush()
			})
			// Worker 0 closes the connection: the read ends with EOF or a
			// reset, not the deadline.
			waitClosed(t, fr)
			cancel()
			c.Close()
			wg.Wait()
			closed := 0
			for _, e := range errs() {
				if strings.Contains(e, "credit") && !strings.Contains(e, "closed a connection from a peer worker") {
					t.Errorf("logged %q, want the connection closed", e)
				}
				if strings.Contains(e, "closed a connection from a peer worker") && strings.Contains(e, tt.log) {
					closed++
				}
			}
			if closed != 1 {
				t.Errorf("%d lines saying the connection was closed for %q, want 1; errors: %q", closed, tt.log, errs())
			}

			// A peer that reconnects to send more of them is closed every
			// time, and logged a few times a minute.
			const again = 30
			for range again {
				c, fr, fw := dialWorker(t, ln.Addr().String(), h)
				fw.Write(transport.FrameBackpressure, tt.payload)
				fw.Flush()
				waitClosed(t, fr)
				c.Close()
			}
			closed = 0
			for _, e := range errs() {
				if strings.Contains(e, "closed a connection from a peer worker") {
					closed++
				}
			}
			if closed < 2 || closed > ratelog.DefaultBurst+1 {
				t.Errorf("%d lines for %d connections closed, want a few, at most %d: %q", closed, again+1, ratelog.DefaultBurst+1, errs())
			}
		})
	}
}

// dialWorker connects to a worker with hello h and reads its answer.
func dialWorker(t *testing.T, addr string, h transport.Hello) (net.Conn, *transport.FrameReader, *transport.FrameWriter) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fw := transport.NewFrameWriter(c, 0)
	if err := fw.Write(transport.FrameHello, transport.AppendHello(nil, h)); err != nil {
		t.Fatal(err)
	}
	fw.Flush()
	fr := transport.NewFrameReader(c, 0)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if kind, _, err := fr.Read(); err != nil || kind != transport.FrameHello {
		t.Fatalf("the worker's answer: %v, %v; want its hello", kind, err)
	}
	return c, fr, fw
}

// waitClosed reads until the worker closes the connection, failing the
// test if the read deadline (10 s from dialWorker) passes first.
func waitClosed(t *testing.T, fr *transport.FrameReader) {
	t.Helper()
	for {
		_, _, err := fr.Read()
		if err == nil {
			continue // heartbeats
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the worker kept the connection open for 10 s after a malformed credit frame")
		}
		return
	}
}
