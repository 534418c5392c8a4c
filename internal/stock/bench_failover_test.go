package stock

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gale-stream/gale/internal/cli"
	"github.com/gale-stream/gale/internal/cli/clitest"
)

// TestBenchFailoverJSON runs the machine-loss bench for real, small: two
// supervisors, one of them kill -9'd with its workers after 8 s. Every
// sentence the queue made is acked in the end (lost = 0), and the report
// has the documented shape: a window per period, the kill with its
// recovery, the 1 s windows. The recovery time is logged, not asserted:
// it depends on how busy the machine is.
func TestBenchFailoverJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster for about 20 s")
	}
	t.Setenv(clitest.MainEnv, "1") // the cluster's processes are this binary, as gale
	code, stdout, _ := runGale(t, "bench", "failover", "--supervisors", "2", "--kill-every", "8s", "--warmup", "1s",
		"--rate", "100", "--json")
	var r struct {
		Supervisors int `json:"supervisors"`
		Workers     int `json:"workers"`
		Windows     []struct {
			FromS           float64  `json:"from_s"`
			ToS             float64  `json:"to_s"`
			Supervisors     int      `json:"supervisors"`
			Workers         int      `json:"workers"`
			AckedPerS       *float64 `json:"acked_per_s"`
			P50Ms           *float64 `json:"p50_ms"`
			P99Ms           *float64 `json:"p99_ms"`
			RecoveredAfterS *float64 `json:"recovered_after_s"`
		} `json:"windows"`
		Kills []struct {
			AtS             float64  `json:"at_s"`
			Supervisor      string   `json:"supervisor"`
			WorkersKilled   int      `json:"workers_killed"`
			RecoveredAfterS *float64 `json:"recovered_after_s"`
		} `json:"kills"`
		Seconds    []json.RawMessage `json:"seconds"`
		Produced   int64             `json:"produced"`
		Emitted    *int64            `json:"emitted"`
		Acked      int64             `json:"acked"`
		Failed     *int64            `json:"failed"`
		Replayed   *int64            `json:"replayed"`
		Duplicates int64             `json:"duplicates"`
		Lost       *int64            `json:"lost"`
		Error      string            `json:"error"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, stdout)
	}
	if code != exitOK || r.Error != "" {
		t.Fatalf("exit %d, error %q: want 0 and none", code, r.Error)
	}
	if r.Lost == nil || *r.Lost != 0 {
		t.Errorf("lost %v, want 0", r.Lost)
	}
	if r.Emitted == nil || r.Failed == nil || r.Replayed == nil {
		t.Errorf("emitted %v, failed %v, replayed %v: want all three reported", r.Emitted, r.Failed, r.Replayed)
	}
	if r.Produced < 1000 || r.Acked != r.Produced {
		t.Errorf("produced %d, acked %d: want ≥ 1000 produced (100/s for 17 s), every one acked", r.Produced, r.Acked)
	}
	if r.Supervisors != 2 || r.Workers != 4 {
		t.Errorf("supervisors %d, workers %d: want 2 and the default 2 per supervisor", r.Supervisors, r.Workers)
	}
	if len(r.Windows) != 2 {
		t.Fatalf("%d windows, want 2 (before and after the kill)", len(r.Windows))
	}
	for i, want := range []struct {
		from, to    float64
		supervisors int
	}{{0, 8, 2}, {8, 16, 1}} {
		w := r.Windows[i]
		if w.FromS != want.from || w.ToS != want.to || w.Supervisors != want.supervisors {
			t.Errorf("window %d: %v–%v s with %d supervisors, want %v–%v s with %d", i, w.FromS, w.ToS, w.Supervisors, want.from, want.to, want.supervisors)
		}
		if w.AckedPerS == nil || w.P50Ms == nil || w.P99Ms == nil {
			t.Errorf("window %d lacks a throughput or a latency: %+v", i, w)
		}
	}
	if *r.Windows[0].AckedPerS <= 0 || r.Windows[0].Workers != 4 {
		t.Errorf("first window: %v acked/s with %d workers, want sentences acked by 4 workers", *r.Windows[0].AckedPerS, r.Windows[0].Workers)
	}
	if len(r.Kills) != 1 || r.Kills[0].AtS != 8 || r.Kills[0].Supervisor != "supervisor-1" || r.Kills[0].WorkersKilled < 1 {
		t.Fatalf("kills %+v, want supervisor-1 and its workers at 8 s", r.Kills)
	}
	if len(r.Seconds) < 17 {
		t.Errorf("%d 1 s windows, want at least 17 (1 s warm-up, 2 periods of 8 s)", len(r.Seconds))
	}
	if rec := r.Kills[0].RecoveredAfterS; rec != nil {
		t.Logf("recovered %.0f s after the kill; %d duplicates", *rec, r.Duplicates)
	} else {
		t.Logf("not recovered within the 8 s period; %d duplicates", r.Duplicates)
	}
}

// TestBenchFailoverFlags: bad flags are refused before anything starts,
// each named.
func TestBenchFailoverFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--supervisors", "0"}, "--supervisors"},
		{[]string{"--rate", "0"}, "--rate"},
		{[]string{"--kill-every", "1500ms"}, "--kill-every"},
		{[]string{"--supervisors", "2", "--kills", "2"}, "--kills"},
		{[]string{"--message-timeout", "0"}, "--message-timeout"},
	} {
		code, _, stderr := runGale(t, append([]string{"bench", "failover"}, c.args...)...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q: want 2 naming %s", c.args, code, stderr, c.want)
		}
	}
}

// TestFailoverRecovery: the recovery is read off the 1 s windows after a
// kill: the end of the first window from which on 3 are at ≥ 80% of the
// period's steady state (the median of its last third).
func TestFailoverRecovery(t *testing.T) {
	secs := func(rates ...float64) []failoverSecond {
		out := make([]failoverSecond, len(rates))
		for i, r := range rates {
			out[i] = failoverSecond{S: float64(21 + i), AckedPerS: r}
		}
		return out
	}
	for _, c := range []struct {
		name   string
		rates  []failoverSecond
		steady float64
		after  float64 // 0: none
		low    float64
	}{
		{"no dip", secs(100, 100, 100, 100, 100, 100), 100, 1, 100},
		{"a dip, then back", secs(90, 0, 0, 50, 85, 120, 100, 100, 100), 100, 5, 0},
		{"a blip is not back", secs(0, 90, 0, 0, 90, 90, 90, 100, 100), 100, 5, 0},
		{"back at the very end", secs(0, 0, 0, 0, 0, 0, 100, 100, 100), 100, 7, 0},
		{"never", secs(0, 0, 0, 0, 0, 0), 0, 0, 0},
	} {
		got := steadyState(c.rates)
		if got != c.steady {
			t.Errorf("%s: steady %v, want %v", c.name, got, c.steady)
		}
		after, low := recovery(c.rates, got)
		switch {
		case c.after == 0 && after != nil:
			t.Errorf("%s: recovered after %v s, want never", c.name, *after)
		case c.after != 0 && (after == nil || *after != c.after):
			t.Errorf("%s: recovered after %v, want %v s", c.name, after, c.after)
		}
		if low != c.low {
			t.Errorf("%s: lowest %v, want %v", c.name, low, c.low)
		}
	}
}

// TestFailoverTopologyNameTaken: a program cannot name a topology of its
// own as the failover bench's, whose workers rebuild it by that name.
func TestFailoverTopologyNameTaken(t *testing.T) {
	var out, errOut strings.Builder
	code := cli.Run([]string{"version"}, &out, &errOut, Options(cli.Options{Name: "clicks", Topologies: []cli.Topology{
		{Name: "bench-failover", Build: testOptions.Topologies[0].Build}}}))
	if code != exitRuntime || !strings.Contains(errOut.String(), `"bench-failover" is taken`) {
		t.Errorf("exit %d, stderr %q: want 1 saying the name is taken", code, errOut.String())
	}
}
