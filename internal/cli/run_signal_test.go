//go:build unix

package cli

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// galeProc is this test binary run as gale in its own process, so that
// signals reach it and nothing else.
type galeProc struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	lines  chan string // stderr, line by line
	mu     sync.Mutex
	stderr []string
	done   chan struct{} // stderr ended
}

func startGale(t *testing.T, args ...string) *galeProc {
	t.Helper()
	p := &galeProc{lines: make(chan string, 1024), done: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], args...)
	p.cmd.Env = append(os.Environ(), galeMainEnv+"=1")
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
		p.mu.Lock()
		t.Logf("gale %s stderr:\n%s", strings.Join(args, " "), strings.Join(p.stderr, "\n"))
		p.mu.Unlock()
	})
	return p
}

// waitLine waits for a stderr line containing s.
func (p *galeProc) waitLine(t *testing.T, s string) {
	t.Helper()
	deadline := time.NewTimer(60 * time.Second)
	defer deadline.Stop()
	for {
		select {
		case l := <-p.lines:
			if strings.Contains(l, s) {
				return
			}
		case <-p.done:
			t.Fatalf("stderr ended before a line with %q", s)
		case <-deadline.C:
			t.Fatalf("no stderr line with %q within a minute", s)
		}
	}
}

// wait waits for the process to exit, reading all of stderr first.
func (p *galeProc) wait(t *testing.T) *os.ProcessState {
	t.Helper()
	<-p.done
	err := p.cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return p.cmd.ProcessState
}

// TestRunSignalDrains: the first SIGINT stops a run in order, every tree
// in flight drained, and it still reports.
func TestRunSignalDrains(t *testing.T) {
	t.Parallel()
	p := startGale(t, "run", "wordcount", "--json")
	p.waitLine(t, "running wordcount")
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	st := p.wait(t)
	if st.ExitCode() != exitOK {
		t.Fatalf("exit: %v, want code 0", st)
	}
	var r runReportJSON
	decodeOne(t, p.stdout.String(), &r)
	if r.StoppedBy != "signal" || r.Failed != 0 || r.Pending != 0 || r.Emitted != r.Acked {
		t.Errorf("stopped_by %q, failed %d, pending %d, emitted %d, acked %d: want signal, 0, 0, emitted = acked",
			r.StoppedBy, r.Failed, r.Pending, r.Emitted, r.Acked)
	}
}

// TestRunSecondSignalKills: a second SIGINT during the drain (the stuck
// topology's would last a minute) kills the program at once.
func TestRunSecondSignalKills(t *testing.T) {
	t.Parallel()
	p := startGale(t, "run", "stuck")
	p.waitLine(t, "running stuck")
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	// The drain waits up to a minute for the tree the bolt holds.
	p.waitLine(t, "stopping: draining")
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	st := p.wait(t)
	ws, ok := st.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Errorf("exit: %v, want killed by SIGINT", st)
	}
	if p.stdout.Len() != 0 {
		t.Errorf("stdout: got %q, want nothing (killed before the report)", p.stdout.String())
	}
}
