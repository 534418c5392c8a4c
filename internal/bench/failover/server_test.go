package failover

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gale-stream/gale"
)

func listen(t *testing.T, rate float64) *Server {
	t.Helper()
	s, err := Listen(ServerConfig{Rate: rate, Lease: time.Minute, MaxUnacked: 10000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// waitFor polls the server's sample until ok, or fails after a generous
// deadline (a safety net, not a measurement).
func waitFor(t *testing.T, s *Server, what string, ok func(Sample) bool) Sample {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		sm := s.Sample()
		if ok(sm) {
			return sm
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a minute; last sample %+v", what, sm)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestServerProtocol: a spout gets no more messages than its credit, its
// acks and nacks are applied, and what it held when its connection
// closed is put back.
func TestServerProtocol(t *testing.T) {
	s := listen(t, 1000)
	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	r := bufio.NewReader(nc)
	fmt.Fprintf(nc, "T 3\n")
	s.Produce(true)
	var got []uint64
	for range 3 {
		nc.SetReadDeadline(time.Now().Add(time.Minute))
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		var id uint64
		var w1 string
		if _, err := fmt.Sscanf(l, "M %d %s", &id, &w1); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if n := len(strings.Fields(l)) - 2; n != 8 {
			t.Errorf("line %q has %d words, want a sentence of 8", l, n)
		}
		got = append(got, id)
	}
	waitFor(t, s, "production", func(sm Sample) bool { return sm.Produced > 20 })
	// No fourth message without credit.
	nc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if l, err := r.ReadString('\n'); err == nil {
		t.Fatalf("got %q beyond the credit of 3", l)
	}
	fmt.Fprintf(nc, "A %d 2000000\nN %d\n", got[0], got[1])
	sm := waitFor(t, s, "the ack and the nack", func(sm Sample) bool { return sm.Acked == 1 && sm.Failed == 1 })
	if sm.Held != 1 || sm.ReplayedFailed != 1 || sm.Spouts != 1 {
		t.Errorf("held %d, replayed on a nack %d, spouts %d: want 1, 1, 1", sm.Held, sm.ReplayedFailed, sm.Spouts)
	}
	if p := s.Latencies().Quantile(0.5); p < 1900*time.Microsecond || p > 2100*time.Microsecond {
		t.Errorf("p50 %s, want the 2ms the ack said", p)
	}
	nc.Close()
	sm = waitFor(t, s, "the disconnect", func(sm Sample) bool { return sm.Spouts == 0 })
	if sm.Held != 0 || sm.ReplayedLeft != 1 {
		t.Errorf("held %d, replayed on disconnect %d: want 0 and 1", sm.Held, sm.ReplayedLeft)
	}
}

// TestServerBadLine: a connection that sends nonsense is closed, and
// what it held put back.
func TestServerBadLine(t *testing.T) {
	s := listen(t, 1000)
	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	fmt.Fprintf(nc, "T 1\n")
	s.Produce(true)
	waitFor(t, s, "a held message", func(sm Sample) bool { return sm.Held == 1 })
	fmt.Fprintf(nc, "hello\n")
	waitFor(t, s, "the disconnect", func(sm Sample) bool { return sm.Spouts == 0 && sm.Held == 0 && sm.ReplayedLeft == 1 })
}

// TestSpoutInTopology: the word count with the queue's spouts, run in
// this process, acks every sentence the queue made once production stops,
// and loses none.
func TestSpoutInTopology(t *testing.T) {
	s := listen(t, 500)
	topo, _, err := Build(map[string]string{"queue": s.Addr(), "spouts": "2", "splitters": "2", "counters": "2", "prefetch": "4"})
	if err != nil {
		t.Fatal(err)
	}
	lt, err := gale.StartLocal("failover", gale.Config{gale.TopologyMaxSpoutPending: 50}, topo, gale.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer lt.Stop()
	waitFor(t, s, "both spouts", func(sm Sample) bool { return sm.Spouts == 2 })
	s.Produce(true)
	waitFor(t, s, "acks", func(sm Sample) bool { return sm.Acked >= 200 })
	s.Produce(false)
	sm := waitFor(t, s, "the drain", func(sm Sample) bool { return sm.Unacked == 0 })
	if sm.Acked != sm.Produced || sm.Duplicates != 0 || sm.Failed != 0 {
		t.Errorf("produced %d, acked %d, duplicates %d, failed %d: want every one acked once, none failed",
			sm.Produced, sm.Acked, sm.Duplicates, sm.Failed)
	}
	lt.Stop()
	waitFor(t, s, "the spouts to close", func(sm Sample) bool { return sm.Spouts == 0 })
}

// TestBuildParams: the topology's parameters are checked, each error
// naming the parameter.
func TestBuildParams(t *testing.T) {
	for _, c := range []struct {
		params map[string]string
		want   string
	}{
		{map[string]string{}, "parameter queue"},
		{map[string]string{"queue": "nowhere"}, "HOST:PORT"},
		{map[string]string{"queue": "127.0.0.1:1", "spouts": "0"}, "parameter spouts"},
		{map[string]string{"queue": "127.0.0.1:1", "colour": "red"}, `unknown parameter "colour"`},
	} {
		if _, _, err := Build(c.params); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Build(%v): %v, want an error naming %q", c.params, err, c.want)
		}
	}
}
