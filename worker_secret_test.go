package gale_test

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
	"github.com/gale-stream/gale/internal/bridge"
	"github.com/gale-stream/gale/internal/testutil"
	"github.com/gale-stream/gale/internal/transport"
	"github.com/gale-stream/gale/internal/worker"
)

const (
	testSecret = "7f3e2a9c4b1d8e6f0a5c3b7d9e1f2a4c6b8d0e2f4a6c8e0b2d4f6a8c0e2b4d6f"
	noProof    = "does not prove the topology's secret: is it a worker of another topology or an old assignment?"
)

// TestWorkersSameSecret: workers that hold the topology's secret prove
// it to each other and run the word count exactly.
func TestWorkersSameSecret(t *testing.T) {
	wc := &wordCount{n: 1000}
	topo := wc.topology(t, 2, 2, 2)
	rec := newRecorder(galetest.NewClock(testEpoch))
	obs := rec.observer()
	w := startWorkersWith(t, 2, topo, gale.Config{}, workerSetup{
		obs:     func(int) *bridge.Observer { return obs },
		secrets: []string{testSecret, testSecret},
	})
	total := 2 * wc.n
	testutil.Eventually(t, 60*time.Second, "every sentence acked", func() bool { return len(rec.Acked("sentences")) >= total })
	checkExact(t, rec, wc, total)
	for i, st := range w.status() {
		if st.WireTuplesSent == 0 {
			t.Errorf("worker %d sent nothing to its peer: the test does not cross processes", i)
		}
	}
}

// TestWorkersOtherSecretRefused: workers of the same topology and
// assignment that hold different secrets (or one holds none) refuse each
// other at the hello, and each fails, as for any mismatch, with an error
// saying its peer does not prove the secret; no spout starts.
func TestWorkersOtherSecretRefused(t *testing.T) {
	tests := []struct {
		name    string
		secrets []string
		want    [2]string
	}{
		{"other secret", []string{testSecret, strings.Repeat("0", 64)}, [2]string{noProof, noProof}},
		{"one without", []string{testSecret, ""}, [2]string{"proves a topology secret, and worker \"1\" holds none", noProof + " (it sent no proof"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wc := &wordCount{n: 1000}
			rec := newRecorder(galetest.NewClock(testEpoch))
			obs := rec.observer()
			w := startWorkersWith(t, 2, wc.topology(t, 2, 2, 2), gale.Config{}, workerSetup{
				obs:     func(int) *bridge.Observer { return obs },
				secrets: tc.secrets,
			})
			for i, wk := range w.ws {
				select {
				case err := <-wk.Failed():
					if !errors.Is(err, transport.ErrMismatch) || !strings.Contains(err.Error(), "cannot work with peer worker") ||
						!strings.Contains(err.Error(), tc.want[i]) {
						t.Errorf("worker %d failed with %v, want a mismatch saying %q", i, err, tc.want[i])
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("worker %d did not fail in 10 s although its peer holds another secret", i)
				}
			}
			for i, st := range w.status() {
				if st.PeersConnected != 0 || st.WireTuplesSent != 0 {
					t.Errorf("worker %d connected to or sent to a peer with another secret: %+v", i, st)
				}
			}
			if n := len(rec.Acked("sentences")); n != 0 {
				t.Errorf("%d sentences acked by workers that never connected", n)
			}
		})
	}
}

// TestWorkerRefusesHostileClient: a client that speaks Gale's protocol
// and copies a worker's own hello, but does not hold the secret, is
// refused by the worker whether it sends no proof or a forged one, with
// a permanent refusal saying so; its data never arrives.
func TestWorkerRefusesHostileClient(t *testing.T) {
	// The peer's address: it learns worker 0's hello from worker 0's
	// dial, and answers nothing.
	peer, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log, errs := errorLines(t)
	w, err := bridge.StartWorker("test", gale.Config{}, twoComponents(t, 1),
		worker.Assignment{Worker: 0, Workers: []string{ln.Addr().String(), peer.Addr().String()}, Secret: testSecret},
		worker.Options{Logger: log, Listener: ln}, bridge.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	pc, err := peer.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	pc.SetDeadline(time.Now().Add(10 * time.Second))
	kind, payload, err := transport.NewFrameReader(pc, 0).Read()
	if err != nil || kind != transport.FrameHello {
		t.Fatalf("worker 0's hello: %v, %v", kind, err)
	}
	h, err := transport.ParseHello(payload)
	if err != nil {
		t.Fatal(err)
	}
	if h.Nonce == "" || h.Proof != "" {
		t.Fatalf("worker 0's hello %+v: want a nonce and no proof", h)
	}
	h.Worker = "1"
	withoutNonce := h
	withoutNonce.Nonce = ""
	tests := []struct {
		name  string
		hello transport.Hello
		proof []byte // nil: none sent, the hello itself is refused
		want  string
	}{
		{"no proof", withoutNonce, nil, noProof},
		{"a forged proof", h, []byte(strings.Repeat("\x42", 32)), noProof + " (its proof is wrong"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			fw, fr := transport.NewFrameWriter(c, 0), transport.NewFrameReader(c, 0)
			fw.Write(transport.FrameHello, transport.AppendHello(nil, tc.hello))
			if err := fw.Flush(); err != nil {
				t.Fatal(err)
			}
			kind, payload, err := fr.Read()
			if err != nil {
				t.Fatal(err)
			}
			if tc.proof != nil {
				if kind != transport.FrameHello {
					t.Fatalf("worker 0 answered with a %s frame, want its hello", kind)
				}
				fw.Write(transport.FrameProof, tc.proof)
				if err := fw.Flush(); err != nil {
					t.Fatal(err)
				}
				if kind, payload, err = fr.Read(); err != nil {
					t.Fatal(err)
				}
			}
			if kind != transport.FrameRefuse || len(payload) == 0 || payload[0]&1 == 0 || !strings.Contains(string(payload[1:]), tc.want) {
				t.Fatalf("worker 0 answered with a %s frame %q, want a permanent refusal saying %q", kind, payload, tc.want)
			}
			fw.Write(transport.FrameData, []byte{1})
			fw.Flush()
			if _, _, err := fr.Read(); err == nil {
				t.Fatal("the connection stayed open after the refusal")
			}
		})
	}
	if st := w.Status(); st.PeersConnected != 0 {
		t.Errorf("worker 0 reports %d peers connected", st.PeersConnected)
	}
	testutil.Eventually(t, 10*time.Second, "the refusals logged", func() bool {
		n := 0
		for _, e := range errs() {
			if strings.Contains(e, "refused a worker connection") && strings.Contains(e, "does not prove the topology's secret") {
				n++
			}
		}
		return n == len(tests)
	})
}
