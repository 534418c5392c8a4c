// A program in a process of its own for a test (StartProc): its stdout
// collected, its stderr read line by line so that the test can wait for a
// line, and the process killed and its stderr logged at the end of the
// test.

package testutil

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// Proc is a started program.
type Proc struct {
	Cmd    *exec.Cmd
	Stdout bytes.Buffer

	lines  chan string // stderr, line by line; lines nobody waits for are dropped
	mu     sync.Mutex
	stderr []string
	done   chan struct{} // stderr ended
}

// StartProc starts cmd, whose Stdout and Stderr it sets. At the end of the
// test the process is killed, if still running, and its stderr logged.
func StartProc(t testing.TB, cmd *exec.Cmd) *Proc {
	t.Helper()
	p := &Proc{Cmd: cmd, lines: make(chan string, 1024), done: make(chan struct{})}
	cmd.Stdout = &p.Stdout
	r, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
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
		cmd.Process.Kill()
		<-p.done
		cmd.Wait()
		t.Logf("%s stderr:\n%s", strings.Join(cmd.Args, " "), p.Stderr())
	})
	return p
}

// Stderr is what the program wrote to stderr so far.
func (p *Proc) Stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.stderr, "\n")
}

// WaitLine waits, up to two minutes, for a stderr line that ok accepts;
// what names it in the failure.
func (p *Proc) WaitLine(t testing.TB, what string, ok func(string) bool) {
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

// WaitLineContaining waits for a stderr line containing s.
func (p *Proc) WaitLineContaining(t testing.TB, s string) {
	t.Helper()
	p.WaitLine(t, fmt.Sprintf("a line with %q", s), func(l string) bool { return strings.Contains(l, s) })
}

// Wait waits for the program to exit, having read all of its stderr, and
// returns its state.
func (p *Proc) Wait(t testing.TB) *os.ProcessState {
	t.Helper()
	<-p.done
	err := p.Cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return p.Cmd.ProcessState
}
