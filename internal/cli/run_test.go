package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/examples/wordcount"
	"github.com/gale-stream/gale/internal/cli/clitest"
)

// runReportJSON is the part of `run --json` a user relies on.
type runReportJSON struct {
	Topology  string  `json:"topology"`
	Workers   int     `json:"workers"`
	DurationS float64 `json:"duration_s"`
	StoppedBy string  `json:"stopped_by"`
	Emitted   int64   `json:"emitted"`
	Acked     int64   `json:"acked"`
	Failed    int64   `json:"failed"`
	Pending   int64   `json:"pending"`
	Errors    int64   `json:"errors"`
	Spouts    []struct {
		Component string `json:"component"`
		Tasks     int    `json:"tasks"`
		Emitted   int64  `json:"emitted"`
		Acked     int64  `json:"acked"`
		Failed    int64  `json:"failed"`
		Pending   int64  `json:"pending"`
	} `json:"spouts"`
	Error string `json:"error"`
}

func TestRunUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr []string
	}{
		{name: "no name", args: []string{"run"}, code: exitUsage, stderr: []string{"needs the name of a topology", "stuck, wordcount", "gale run --help"}},
		{name: "unknown name", args: []string{"run", "wordcont"}, code: exitUsage, stderr: []string{`unknown topology "wordcont"`, "gale has stuck, wordcount"}},
		{name: "two names", args: []string{"run", "wordcount", "stuck"}, code: exitUsage, stderr: []string{"one topology name"}},
		{name: "zero workers", args: []string{"run", "wordcount", "--workers", "0"}, code: exitUsage, stderr: []string{"--workers", "got 0"}},
		{name: "more workers than a machine holds", args: []string{"run", "wordcount", "--workers", "100000"}, code: exitUsage, stderr: []string{"--workers must be between 1 and 16, got 100000"}},
		{name: "negative duration", args: []string{"run", "wordcount", "--duration", "-1s"}, code: exitUsage, stderr: []string{"--duration"}},
		{name: "param without value", args: []string{"run", "wordcount", "--param", "splitters"}, code: exitUsage, stderr: []string{"--param", `"splitters"`}},
		{name: "param twice", args: []string{"run", "wordcount", "-p", "splitters=1", "-p", "splitters=2"}, code: exitUsage, stderr: []string{"--param splitters is given twice"}},
		{
			name:   "every mistake is reported",
			args:   []string{"run", "nope", "--workers", "0", "--duration", "-1s"},
			code:   exitUsage,
			stderr: []string{`"nope"`, "--workers", "--duration"},
		},
		{name: "parameter the topology rejects", args: []string{"run", "wordcount", "-p", "splitters=0"}, code: exitRuntime, stderr: []string{`topology "wordcount"`, "splitters", `"0"`}},
		{name: "parameter the topology does not know", args: []string{"run", "wordcount", "-p", "spouts=2"}, code: exitRuntime, stderr: []string{`unknown parameter "spouts"`, "counters, splitters"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runGale(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit code: got %d, want %d", code, tt.code)
			}
			for _, want := range tt.stderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr does not contain %q", want)
				}
			}
			if stdout != "" {
				t.Errorf("stdout: got %q, want nothing", stdout)
			}
		})
	}
}

// TestRunFile: run layers a gale.yaml (--file) under the topology's
// config, and checks it before starting anything.
func TestRunFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("topology.message.timeout.sec: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runGale(t, "run", "wordcount", "--file", bad, "--duration", "1s")
	if code != exitRuntime {
		t.Errorf("exit code: got %d, want %d", code, exitRuntime)
	}
	if !strings.Contains(stderr, `"topology.message.timeout.sec"`) || strings.Contains(stderr, "running") || stdout != "" {
		t.Errorf("want only the error naming the unknown key, before anything runs; stdout %q, stderr:\n%s", stdout, stderr)
	}
	code, _, stderr = runGale(t, "run", "wordcount", "--file", filepath.Join(dir, "missing.yaml"))
	if code != exitRuntime || !strings.Contains(stderr, "missing.yaml") {
		t.Errorf("missing file: exit %d, stderr %q; want 1 and the path", code, stderr)
	}
}

// TestRunHelpListsTopologies: `run --help` names every topology with its
// description.
func TestRunHelpListsTopologies(t *testing.T) {
	t.Parallel()
	code, stdout, _ := runGale(t, "run", "--help")
	if code != exitOK {
		t.Fatalf("exit code: got %d, want %d", code, exitOK)
	}
	for _, want := range []string{"wordcount", "the classic word count", "stuck", "--workers", "--duration", "--param", "--json"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("help does not contain %q:\n%s", want, stdout)
		}
	}
}

// TestRunBadTopologies: a program that hands Main unusable topologies
// hears which, from every command.
func TestRunBadTopologies(t *testing.T) {
	t.Parallel()
	opts := Options{Name: "prog", Topologies: []Topology{
		{Name: "a", Build: wordcount.Build},
		{Name: "a", Build: wordcount.Build},
		{Name: "b c", Build: wordcount.Build},
		{Name: "d"},
	}}
	var out, errOut clitest.SyncBuffer
	code := Run([]string{"version"}, &out, &errOut, opts)
	if code != exitRuntime {
		t.Errorf("exit code: got %d, want %d", code, exitRuntime)
	}
	for _, want := range []string{"prog: ", `topology "a" is given twice`, `"b c"`, `topology "d" has no Build`} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr does not contain %q:\n%s", want, errOut.String())
		}
	}
}

// TestRunJSON runs the word count in this process for a bounded time: one
// JSON document on stdout, every tree acked by the end.
func TestRunJSON(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runGale(t, "run", "wordcount", "--duration", "1500ms", "--json", "-p", "counters=3")
	if code != exitOK {
		t.Fatalf("exit code: got %d, want %d", code, exitOK)
	}
	var r runReportJSON
	clitest.DecodeOne(t, stdout, &r)
	t.Logf("report: %+v", r)
	if r.Topology != "wordcount" || r.Workers != 1 || r.StoppedBy != "duration" || r.Error != "" {
		t.Errorf("topology %q, workers %d, stopped_by %q, error %q; want wordcount, 1, duration, none",
			r.Topology, r.Workers, r.StoppedBy, r.Error)
	}
	if r.DurationS < 1.5 {
		t.Errorf("duration_s %v, want ≥ 1.5 (--duration 1500ms)", r.DurationS)
	}
	if r.Acked <= 0 || r.Failed != 0 || r.Pending != 0 || r.Errors != 0 {
		t.Errorf("acked %d, failed %d, pending %d, errors %d: want > 0, 0, 0, 0", r.Acked, r.Failed, r.Pending, r.Errors)
	}
	// Every sentence is emitted with a message id, and the drain leaves
	// none in flight.
	if r.Emitted != r.Acked {
		t.Errorf("emitted %d, acked %d: want equal after the drain", r.Emitted, r.Acked)
	}
	if len(r.Spouts) != 1 || r.Spouts[0].Component != "sentences" || r.Spouts[0].Tasks != 1 || r.Spouts[0].Acked != r.Acked {
		t.Errorf("spouts %+v: want one, sentences, 1 task, acked %d", r.Spouts, r.Acked)
	}
	if strings.Contains(stderr, "emitted") {
		t.Errorf("stderr has live numbers with --json:\n%s", stderr)
	}
}

// TestRunTable runs without --json for a little over a second: the report
// table on stdout, live numbers on stderr each second.
func TestRunTable(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runGale(t, "run", "wordcount", "--duration", "1200ms")
	if code != exitOK {
		t.Fatalf("exit code: got %d, want %d", code, exitOK)
	}
	t.Logf("stdout:\n%s", stdout)
	for _, row := range []string{"topology", "workers", "duration", "stopped by", "errors"} {
		if !hasRow(stdout, row) {
			t.Errorf("report has no %q row", row)
		}
	}
	f := tableRow(stdout, "sentences")
	if len(f) != 6 || f[1] != "1" || f[2] != f[3] || f[2] == "0" || f[4] != "0" || f[5] != "0" {
		t.Errorf("sentences row %q: want 1 task, emitted = acked > 0, failed 0, pending 0", f)
	}
	if !strings.Contains(stderr, "running wordcount in this process") {
		t.Errorf("stderr does not say what runs")
	}
	live := 0
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, "sentences  emitted ") && strings.Contains(line, "acked") && strings.Contains(line, "pending") {
			live++
		}
	}
	if live < 1 {
		t.Errorf("stderr: got %d live lines, want ≥ 1 after 1.2s", live)
	}
}

// TestRunTableMaxPending: with topology.max.spout.pending set, the table
// shows each spout's limit beside its trees in flight.
func TestRunTableMaxPending(t *testing.T) {
	t.Parallel()
	conf := filepath.Join(t.TempDir(), "gale.yaml")
	if err := os.WriteFile(conf, []byte("topology.max.spout.pending: 64\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ := runGale(t, "run", "wordcount", "--file", conf, "--duration", "500ms")
	if code != exitOK {
		t.Fatalf("exit code: got %d, want %d", code, exitOK)
	}
	if !strings.Contains(stdout, "max pending") {
		t.Errorf("the table has no max pending column:\n%s", stdout)
	}
	if f := tableRow(stdout, "sentences"); len(f) != 7 || f[6] != "64" || f[2] == "0" {
		t.Errorf("sentences row %q: want emitted > 0 and max pending 64", f)
	}
}

// buildStuck is a topology whose one tree never completes: its bolt never
// acks, the timeout is an hour and the shutdown drain a minute, so an
// orderly stop waits.
func buildStuck(map[string]string) (*gale.Topology, gale.Config, error) {
	b := gale.NewTopologyBuilder()
	b.SetSpout("once", func() gale.Spout { return &onceSpout{} }, 1)
	b.SetBolt("hold", func() gale.Bolt { return &holdBolt{} }, 1).ShuffleGrouping("once")
	topo, err := b.Build()
	return topo, gale.Config{gale.TopologyMessageTimeoutSecs: 3600, gale.TopologyShutdownDrainTimeoutSecs: 60}, err
}

type onceSpout struct {
	gale.BaseSpout
	done bool
}

func (*onceSpout) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("n") }
func (s *onceSpout) NextTuple() {
	if !s.done {
		s.Collector.Emit(1, 1)
		s.done = true
	}
}

type holdBolt struct{ gale.BaseBolt }

func (*holdBolt) DeclareOutputFields(gale.OutputDeclarer) {}
func (*holdBolt) Execute(*gale.Tuple)                     {}

// hasRow reports whether the table has a line starting with the row name.
func hasRow(table, name string) bool {
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, name+"  ") || strings.HasPrefix(line, name+" ") {
			return true
		}
	}
	return false
}
