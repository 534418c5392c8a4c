package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

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

// proc is the program running in its own process.
type proc struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	lines  chan string // stderr, line by line
	mu     sync.Mutex
	stderr []string
	done   chan struct{} // stderr ended
}

func start(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{lines: make(chan string, 1024), done: make(chan struct{})}
	p.cmd = exec.Command(binary(t), args...)
	p.cmd.Stdout = &p.stdout
	r, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr = append(p.stderr, sc.Text())
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
		io.Copy(io.Discard, r)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		p.cmd.Wait()
		t.Logf("userprog %s stderr:\n%s", strings.Join(args, " "), p.stderrText())
	})
	return p
}

func (p *proc) stderrText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.stderr, "\n")
}

// waitLine waits for a stderr line that ok accepts.
func (p *proc) waitLine(t *testing.T, what string, ok func(string) bool) {
	t.Helper()
	deadline := time.NewTimer(2 * time.Minute)
	defer deadline.Stop()
	for {
		select {
		case l := <-p.lines:
			if ok(l) {
				return
			}
		case <-p.done:
			t.Fatalf("stderr ended before %s", what)
		case <-deadline.C:
			t.Fatalf("no %s on stderr within 2 minutes", what)
		}
	}
}

// exitCode waits for the process and returns its exit code.
func (p *proc) exitCode(t *testing.T) int {
	t.Helper()
	<-p.done
	err := p.cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return p.cmd.ProcessState.ExitCode()
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
			if code := p.exitCode(t); code != 0 {
				t.Fatalf("exit code %d, want 0", code)
			}
			var r report
			if err := json.Unmarshal(p.stdout.Bytes(), &r); err != nil {
				t.Fatalf("stdout is not a JSON document: %v\n%s", err, p.stdout.String())
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
	if code := p.exitCode(t); code != 2 {
		t.Errorf("exit code %d, want 2", code)
	}
	if s := p.stderrText(); !strings.Contains(s, `unknown topology "sensor": userprog has sensors`) {
		t.Errorf("stderr does not name the topologies there are:\n%s", s)
	}
}
