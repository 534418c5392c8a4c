package bench

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*Options)
		wantErr []string // substrings the error must contain; nil = valid
	}{
		{"defaults", func(*Options) {}, nil},
		{"noack plain with rate", func(o *Options) { o.Mode, o.Runner, o.Rate = ModeNoAck, RunnerPlain, 1000 }, nil},
		{"noack without ackers", func(o *Options) { o.Mode, o.Ackers = ModeNoAck, 0 }, nil},
		{"bad mode", func(o *Options) { o.Mode = "maybe" }, []string{`--mode must be "noack" or "ack", got "maybe"`}},
		{"bad runner", func(o *Options) { o.Runner = "flink" }, []string{`--runner must be "gale" or "plain", got "flink"`}},
		{"zero duration", func(o *Options) { o.Duration = 0 }, []string{"--duration must be > 0, got 0s"}},
		{"negative rate", func(o *Options) { o.Rate = -1 }, []string{"--rate must be", "got -1"}},
		{"NaN rate", func(o *Options) { o.Rate = math.NaN() }, []string{"--rate must be", "got NaN"}},
		{"zero spouts", func(o *Options) { o.Spouts = 0 }, []string{"--spouts must be ≥ 1, got 0"}},
		{"zero splitters", func(o *Options) { o.Splitters = 0 }, []string{"--splitters must be ≥ 1, got 0"}},
		{"negative counters", func(o *Options) { o.Counters = -2 }, []string{"--counters must be ≥ 1, got -2"}},
		{"negative ackers", func(o *Options) { o.Ackers = -1 }, []string{"--ackers must be ≥ 0, got -1"}},
		{"ack mode without ackers", func(o *Options) { o.Ackers = 0 }, []string{"--ackers must be ≥ 1 with --mode ack"}},
		{"negative max spout pending", func(o *Options) { o.MaxSpoutPending = -1 }, []string{"--max-spout-pending must be ≥ 0"}},
		{"negative count delay", func(o *Options) { o.CountDelay = -time.Microsecond }, []string{"--count-delay must be ≥ 0, got -1µs"}},
		{"gale runner with 16 workers", func(o *Options) { o.Workers = 16 }, nil},
		{"plain runner with one worker", func(o *Options) { o.Runner, o.Workers = RunnerPlain, 1 }, nil},
		{"zero workers", func(o *Options) { o.Workers = 0 }, []string{"--workers must be between 1 and 16, got 0"}},
		{"too many workers", func(o *Options) { o.Workers = 17 }, []string{"--workers must be between 1 and 16, got 17"}},
		{"plain runner with workers", func(o *Options) { o.Runner, o.Workers = RunnerPlain, 2 },
			[]string{"--workers applies to the gale runner only", "got --workers 2"}},
		{"every problem reported", func(o *Options) { o.Spouts, o.Counters = 0, 0 },
			[]string{"--spouts must be ≥ 1", "--counters must be ≥ 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := DefaultOptions()
			tt.edit(&o)
			err := o.Validate()
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error containing %q", tt.wantErr)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Validate() = %q, want it to contain %q", err, want)
				}
			}
		})
	}
}

func TestDefaultOptionsWorkers(t *testing.T) {
	if got := DefaultOptions().Workers; got != 1 {
		t.Errorf("DefaultOptions().Workers = %d, want 1 (in-process)", got)
	}
}

func TestOptionsSpoutRate(t *testing.T) {
	tests := []struct {
		rate   float64
		spouts int
		want   float64
	}{{0, 4, 0}, {1000, 1, 1000}, {1000, 4, 250}}
	for _, tt := range tests {
		o := Options{Rate: tt.rate, Spouts: tt.spouts}
		if got := o.SpoutRate(); got != tt.want {
			t.Errorf("Options{Rate: %v, Spouts: %d}.SpoutRate() = %v, want %v", tt.rate, tt.spouts, got, tt.want)
		}
	}
}
