package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/gale-stream/gale/internal/testutil"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "userprog-test-")
	if err != nil {
		panic(err)
	}
	buildDir = dir
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

var (
	buildDir  string // TestMain's, removed when the tests end
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds this program with go build, as a user would, once for
// all the tests.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binPath = filepath.Join(buildDir, "userprog")
		if runtime.GOOS == "windows" {
			binPath += ".exe"
		}
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// start runs the program with args in a process of its own.
func start(t *testing.T, args ...string) *testutil.Proc {
	t.Helper()
	return testutil.StartProc(t, exec.Command(binary(t), args...))
}

// report is the part of `run --json` the test relies on.
type report struct {
	Topology  string `json:"topology"`
	Workers   int    `json:"workers"`
	StoppedBy string `json:"stopped_by"`
	Emitted   int64  `json:"emitted"`
	Acked     int64  `json:"acked"`
	Failed    int64  `json:"failed"`
	Pending   int64  `json:"pending"`
	Errors    int64  `json:"errors"`
	Spouts    []struct {
		Component string `json:"component"`
		Acked     int64  `json:"acked"`
	} `json:"spouts"`
}

// TestRun runs the program's topology for two seconds, in this process
// and in two worker processes of the program: every reading is acked.
func TestRun(t *testing.T) {
	for _, workers := range []int{1, 2} {
		t.Run(map[int]string{1: "in-process", 2: "two workers"}[workers], func(t *testing.T) {
			args := []string{"run", "sensors", "--duration", "2s", "--json"}
			if workers > 1 {
				args = append(args, "--workers", "2")
			}
			p := start(t, args...)
			if code := p.Wait(t).ExitCode(); code != 0 {
				t.Fatalf("exit code %d, want 0", code)
			}
			var r report
			if err := json.Unmarshal(p.Stdout.Bytes(), &r); err != nil {
				t.Fatalf("stdout is not a JSON document: %v\n%s", err, p.Stdout.String())
			}
			t.Logf("report: %+v", r)
			if r.Topology != "sensors" || r.Workers != workers || r.StoppedBy != "duration" {
				t.Errorf("topology %q, workers %d, stopped_by %q; want sensors, %d, duration", r.Topology, r.Workers, r.StoppedBy, workers)
			}
			if r.Acked <= 0 || r.Failed != 0 || r.Pending != 0 || r.Emitted != r.Acked || r.Errors != 0 {
				t.Errorf("emitted %d, acked %d, failed %d, pending %d, errors %d: want emitted = acked > 0, the rest 0",
					r.Emitted, r.Acked, r.Failed, r.Pending, r.Errors)
			}
			if len(r.Spouts) != 1 || r.Spouts[0].Component != "readings" {
				t.Errorf("spouts %+v: want readings only", r.Spouts)
			}
		})
	}
}

// TestRunUnknownName: a name the program does not have is a usage error
// that lists the names it has.
func TestRunUnknownName(t *testing.T) {
	p := start(t, "run", "sensor")
	if code := p.Wait(t).ExitCode(); code != 2 {
		t.Errorf("exit code %d, want 2", code)
	}
	if s := p.Stderr(); !strings.Contains(s, `unknown topology "sensor": userprog has sensors`) {
		t.Errorf("stderr does not name the topologies there are:\n%s", s)
	}
}
