package coordination

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// child is etcd or nimbus, run from the gale binary.
type child struct {
	role string
	cmd  *exec.Cmd
	// ready gets the word after the ready line's marker: the address.
	ready chan string
	done  chan struct{} // closed once it exited and its output was read
	err   error         // how it exited, set before done closes
	mu    struct {
		sync.Mutex
		tail []string // its last lines, for errors
	}
}

// readyTimeout bounds a child's start (etcd's first start on a busy disk
// takes seconds).
const readyTimeout = 2 * time.Minute

// stopGrace is how long a child has to stop after SIGTERM before it is
// killed.
const stopGrace = 15 * time.Second

// startChild runs the gale binary with args as role. Its stderr goes to
// log line by line, prefixed with the role; the first line holding marker
// is its ready line, and the word after the marker its address.
func startChild(cfg Config, log *lineWriter, role, marker string, args ...string) (*child, error) {
	c := &child{role: role, ready: make(chan string, 1), done: make(chan struct{})}
	c.cmd = exec.Command(cfg.Exe, append(append([]string(nil), cfg.Args...), args...)...)
	c.cmd.Env = append(os.Environ(), cfg.Env...)
	c.cmd.SysProcAttr = childAttr()
	prefix := "[" + role + "] "
	r, err := c.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", role, err)
	}
	go func() { // owned by the child: done closes once it has exited
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		readied := false
		for sc.Scan() {
			l := sc.Text()
			log.line(prefix + l)
			c.mu.Lock()
			if c.mu.tail = append(c.mu.tail, l); len(c.mu.tail) > 10 {
				c.mu.tail = c.mu.tail[1:]
			}
			c.mu.Unlock()
			if i := strings.Index(l, marker); !readied && i >= 0 {
				w, _, _ := strings.Cut(strings.TrimSpace(l[i+len(marker):]), " ")
				if w != "" {
					readied = true
					c.ready <- w
				}
			}
		}
		_, _ = io.Copy(io.Discard, r)
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// await waits for c's ready line and returns its address.
func (c *child) await(ctx context.Context) (string, error) {
	tm := time.NewTimer(readyTimeout)
	defer tm.Stop()
	select {
	case a := <-c.ready:
		return a, nil
	case <-c.done:
		return "", fmt.Errorf("%s (pid %d) exited before it was ready: %v; its last lines: %s", c.role, c.pid(), exitReason(c.err), c.tail())
	case <-ctx.Done():
		return "", ctx.Err()
	case <-tm.C:
		return "", fmt.Errorf("%s (pid %d) printed no ready line within %v; its last lines: %s", c.role, c.pid(), readyTimeout, c.tail())
	}
}

// exited returns an error if c has exited, naming how.
func (c *child) exited() error {
	select {
	case <-c.done:
		return fmt.Errorf("%s (pid %d) exited: %v; its last lines: %s", c.role, c.pid(), exitReason(c.err), c.tail())
	default:
		return nil
	}
}

func (c *child) tail() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.mu.tail) == 0 {
		return "(none)"
	}
	return strings.Join(c.mu.tail, " | ")
}

// stop sends SIGTERM, kills c if it has not exited within stopGrace, and
// waits for it. It returns an error if c had to be killed; one that
// exited already is left be (watchChildren reported it).
func (c *child) stop() error {
	if c.exited() != nil {
		return nil
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		_ = c.cmd.Process.Kill()
	}
	tm := time.NewTimer(stopGrace)
	defer tm.Stop()
	select {
	case <-c.done:
		return nil
	case <-tm.C:
		_ = c.cmd.Process.Kill()
		<-c.done
		return fmt.Errorf("%s (pid %d) did not stop within %v of SIGTERM and was killed", c.role, c.pid(), stopGrace)
	}
}

func exitReason(err error) string {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return "exit status 0"
	case errors.As(err, &ee):
		return ee.String()
	}
	return err.Error()
}

// lineWriter writes whole lines to w, one at a time, from any goroutine.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) line(s string) {
	if l == nil || l.w == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintln(l.w, s)
}

func (l *lineWriter) printf(format string, args ...any) { l.line(fmt.Sprintf(format, args...)) }
