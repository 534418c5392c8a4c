package kafka

import (
	"context"
	"encoding/json"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

func TestEventRoundTrip(t *testing.T) {
	for _, id := range []int64{0, 1, 7, 123456789} {
		v := AppendEvent(nil, id)
		var e Event
		if err := json.Unmarshal(v, &e); err != nil {
			t.Fatalf("event %d is not JSON: %v: %s", id, err, v)
		}
		got, err := DecodeID(v)
		if err != nil || got != id || e.User == "" || e.Action == "" || e.TS == 0 {
			t.Errorf("event %d: %s decodes to id %d (%v), fields %+v", id, v, got, err, e)
		}
	}
	if _, err := DecodeID([]byte("not json")); err == nil {
		t.Error("DecodeID of a value that is not JSON: no error")
	}
}

func TestTally(t *testing.T) {
	tl := NewTally(5)
	for _, id := range []int64{0, 1, 1, 3, 3, 3, 9, -1} {
		tl.See(id)
	}
	if tl.Complete() {
		t.Error("complete with ids 2 and 4 unseen")
	}
	if got, want := tl.Lost(), int64(2); got != want {
		t.Errorf("lost: got %d, want %d", got, want)
	}
	if got, want := tl.Duplicates(), int64(3); got != want {
		t.Errorf("duplicates: got %d, want %d (1 once more, 3 twice more)", got, want)
	}
	if got, want := tl.Unknown(), int64(2); got != want {
		t.Errorf("unknown: got %d, want %d", got, want)
	}
	if got, want := tl.Missing(10), []int64{2, 4}; !slices.Equal(got, want) {
		t.Errorf("missing: got %v, want %v", got, want)
	}
	tl.See(2)
	tl.See(4)
	if !tl.Complete() || tl.Lost() != 0 {
		t.Errorf("every id seen: complete %v, lost %d", tl.Complete(), tl.Lost())
	}
}

// newCluster starts a kfake broker in this process, closed at the end
// of the test.
func newCluster(t *testing.T, partitions int, topics ...string) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(partitions), topics...), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// TestConsumePlain: the plain consumer reads every produced event once.
func TestConsumePlain(t *testing.T) {
	brokers := newCluster(t, 3, Topic)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const n = 5000
	if err := Produce(ctx, brokers, Topic, 0, n, 0); err != nil {
		t.Fatal(err)
	}
	tl := NewTally(n)
	if err := ConsumePlain(ctx, brokers, Topic, "plain", tl); err != nil {
		t.Fatal(err)
	}
	if tl.Lost() != 0 || tl.Duplicates() != 0 || tl.Unknown() != 0 {
		t.Errorf("lost %d, duplicates %d, unknown %d; want 0, 0, 0", tl.Lost(), tl.Duplicates(), tl.Unknown())
	}
}

// runConfig is a Run of the given modes whose broker child is this test
// binary.
func runConfig(t *testing.T, n int, modes ...string) Config {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Config{Messages: n, Partitions: 4, Modes: modes, Exe: exe, Env: []string{brokerEnv + "=1"}, Stall: time.Minute}
}

// TestRunPlain: a run of the plain mode against the broker child reads
// every id once and measures this process's CPU, with the broker's
// apart.
func TestRunPlain(t *testing.T) {
	const n = 20000
	r, err := Run(context.Background(), runConfig(t, n, ModePlain))
	if err != nil {
		t.Fatalf("%v; report %+v", err, r)
	}
	if len(r.Runs) != 1 {
		t.Fatalf("runs: %+v, want one, plain", r.Runs)
	}
	res := r.Runs[0]
	t.Logf("%+v", res)
	if res.Mode != ModePlain || res.Messages != n || res.Lost != 0 || res.Duplicates != 0 || res.Error != "" {
		t.Errorf("got %+v; want mode plain, %d messages, none lost or duplicated, no error", res, n)
	}
	if res.Seconds <= 0 || res.PerSec <= 0 {
		t.Errorf("seconds %v, messages/s %v: want both > 0", res.Seconds, res.PerSec)
	}
	if runtime.GOOS != "windows" && res.CPUSeconds <= 0 {
		t.Errorf("cpu seconds %v, want > 0", res.CPUSeconds)
	}
	if r.NoAckVsPlain != nil || r.AckVsNoAck != nil {
		t.Errorf("ratios %v, %v with one mode run: want null", r.NoAckVsPlain, r.AckVsNoAck)
	}
}

func TestConfigValidate(t *testing.T) {
	c := Config{Messages: 0, Partitions: 0, Modes: []string{"fast"}}
	err := c.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"--messages must be ≥ 1, got 0", "--partitions must be ≥ 1, got 0", `got "fast"`, "Config.Exe"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
