package doctorfaults

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/gale-stream/gale"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseParams(t *testing.T) {
	for _, tc := range []struct {
		name    string
		params  map[string]string
		want    Params
		wantErr string
	}{
		{name: "none", params: nil, want: DefaultParams()},
		{name: "slow bolt", params: map[string]string{"delay": "20ms", "max-spout-pending": "50"},
			want: Params{Delay: 20 * time.Millisecond, MaxSpoutPending: 50, WorkExecutors: 1, WorkTasks: 4}},
		{name: "timeout", params: map[string]string{"delay": "1500ms", "timeout": "1", "rate": "2.5", "fail-every": "3"},
			want: Params{Delay: 1500 * time.Millisecond, TimeoutSecs: 1, Rate: 2.5, FailEvery: 3, WorkExecutors: 1, WorkTasks: 4}},
		{name: "executors raise the tasks", params: map[string]string{"work-executors": "6"},
			want: Params{WorkExecutors: 6, WorkTasks: 6}},
		{name: "bad delay", params: map[string]string{"delay": "soon"}, wantErr: `parameter delay: want a duration ≥ 0 such as 20ms, got "soon"`},
		{name: "bad int", params: map[string]string{"work-executors": "0"}, wantErr: `parameter work-executors: want a whole number ≥ 1, got "0"`},
		{name: "tasks below executors", params: map[string]string{"work-executors": "3", "work-tasks": "2"}, wantErr: "work-tasks (2) must be ≥ work-executors (3)"},
		{name: "unknown", params: map[string]string{"speed": "1"}, wantErr: `unknown parameter "speed" (doctor-faults takes delay, fail-every, hot-key, live-mb, max-spout-pending, no-ack, rate, timeout, work-executors, work-tasks)`},
		{name: "new faults", params: map[string]string{"hot-key": "0.9", "live-mb": "120", "no-ack": "true"},
			want: Params{HotKey: 0.9, LiveMB: 120, NoAck: true, WorkExecutors: 1, WorkTasks: 4}},
		{name: "bad hot key", params: map[string]string{"hot-key": "90"}, wantErr: `parameter hot-key: want the share of tuples with the hot key, 0 to 1, got "90"`},
		{name: "bad no-ack", params: map[string]string{"no-ack": "sometimes"}, wantErr: `parameter no-ack: want true or false, got "sometimes"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseParams(tc.params)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error: got %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// The faults that are config land in the topology's config layer.
func TestBuildConfig(t *testing.T) {
	topo, conf, err := Build(map[string]string{"max-spout-pending": "1", "timeout": "2", "work-executors": "2"})
	if err != nil {
		t.Fatal(err)
	}
	if conf[gale.TopologyMaxSpoutPending] != 1 || conf[gale.TopologyMessageTimeoutSecs] != 2 {
		t.Errorf("config: got %v, want max spout pending 1, timeout 2", conf)
	}
	if topo == nil {
		t.Fatal("no topology")
	}
	_, conf, _ = Build(nil)
	if len(conf) != 0 {
		t.Errorf("config without faults: got %v, want empty", conf)
	}
}

// The hot key is carried by its share of any run of tuples.
func TestHotKeyShare(t *testing.T) {
	hot := 0
	for n := range int64(10000) {
		if key(n, 0.9) == 0 {
			hot++
		}
		if k := key(n, 0); k < 1 || k > 1000 {
			t.Fatalf("key(%d, 0) = %d, want 1 to 1000", n, k)
		}
	}
	if hot < 8900 || hot > 9100 {
		t.Errorf("%d of 10000 tuples with the hot key at 0.9, want about 9000", hot)
	}
}
