//go:build linux

package netnstest_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gale-stream/gale/internal/netnstest"
)

// agentEnv makes the test binary, run with -test.run=^TestAgent$, an
// agent: a process that does network things for the test from inside a
// host, one command a line on stdin, one answer a line on stdout.
const agentEnv = "GALE_NETNSTEST_AGENT"

// generous bounds the waits for what must happen: only a broken machine
// takes it. Short timeouts are used only where a failure is asserted.
const generous = 60 * time.Second

// TestAgent is the agent's body (see agentEnv). Commands:
//
//	listen ADDR          start an echo server; answers "ok HOST:PORT"
//	dial ID ADDR MS      connect within MS ms and keep the connection as ID
//	echo ID TEXT MS      write TEXT, read the echo within MS ms
//	read ID MS           read a line within MS ms (an echo that stalled)
//	spawn group|session  start sleep 1000 in this process group, or in a
//	                     session of its own; answers "ok PID"
//
// A failure answers "err CLASS message", CLASS one of timeout, refused,
// unreachable, reset, eof, other.
func TestAgent(t *testing.T) {
	if os.Getenv(agentEnv) == "" {
		t.Skip("the agent process of the tests that run one in a host")
	}
	a := &agentState{conns: map[string]*lineConn{}}
	defer a.close()
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if _, err := io.WriteString(os.Stdout, a.do(sc.Text())+"\n"); err != nil {
			t.Fatal(err)
		}
	}
}

type lineConn struct {
	c net.Conn
	r *bufio.Reader
}

type agentState struct {
	conns   map[string]*lineConn
	servers []*echoServer
}

func (a *agentState) close() {
	for _, c := range a.conns {
		c.c.Close()
	}
	for _, s := range a.servers {
		s.close()
	}
}

func (a *agentState) do(line string) string {
	f := strings.Fields(line)
	ms := func(s string) time.Duration {
		n, _ := strconv.Atoi(s)
		return time.Duration(n) * time.Millisecond
	}
	switch {
	case len(f) == 2 && f[0] == "listen":
		s, err := newEchoServer(f[1])
		if err != nil {
			return fail(err)
		}
		a.servers = append(a.servers, s)
		return "ok " + s.addr()
	case len(f) == 4 && f[0] == "dial":
		if old := a.conns[f[1]]; old != nil {
			old.c.Close()
			delete(a.conns, f[1])
		}
		c, err := net.DialTimeout("tcp", f[2], ms(f[3]))
		if err != nil {
			return fail(err)
		}
		a.conns[f[1]] = &lineConn{c: c, r: bufio.NewReader(c)}
		return "ok"
	case len(f) == 4 && f[0] == "echo":
		c := a.conns[f[1]]
		if c == nil {
			return "err other no connection " + f[1]
		}
		c.c.SetDeadline(time.Now().Add(ms(f[3])))
		if _, err := io.WriteString(c.c, f[2]+"\n"); err != nil {
			return fail(err)
		}
		return readLine(c)
	case len(f) == 3 && f[0] == "read":
		c := a.conns[f[1]]
		if c == nil {
			return "err other no connection " + f[1]
		}
		c.c.SetDeadline(time.Now().Add(ms(f[2])))
		return readLine(c)
	case len(f) == 2 && f[0] == "spawn":
		cmd := exec.Command("sleep", "1000")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: f[1] == "session"}
		if err := cmd.Start(); err != nil {
			return fail(err)
		}
		return "ok " + strconv.Itoa(cmd.Process.Pid)
	}
	return "err other bad command " + strconv.Quote(line)
}

func readLine(c *lineConn) string {
	s, err := c.r.ReadString('\n')
	if err != nil {
		return fail(err)
	}
	return "ok " + strings.TrimSuffix(s, "\n")
}

func fail(err error) string { return "err " + class(err) + " " + err.Error() }

// class names what kind of network failure err is.
func class(err error) string {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "unreachable"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "reset"
	case errors.Is(err, io.EOF):
		return "eof"
	}
	return "other"
}

// echoServer answers every line with itself, on every connection, until
// closed.
type echoServer struct {
	ln net.Listener
	wg sync.WaitGroup
	mu struct {
		sync.Mutex
		conns map[net.Conn]struct{}
	}
}

func newEchoServer(addr string) (*echoServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &echoServer{ln: ln}
	s.mu.conns = map[net.Conn]struct{}{}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.mu.conns[c] = struct{}{}
			s.mu.Unlock()
			s.wg.Go(func() {
				defer c.Close()
				io.Copy(c, c)
			})
		}
	})
	return s, nil
}

func (s *echoServer) addr() string { return s.ln.Addr().String() }

// close stops accepting, closes every connection and waits for its
// goroutines.
func (s *echoServer) close() {
	s.ln.Close()
	s.mu.Lock()
	for c := range s.mu.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// startEcho starts an echo server in the test's own namespace (the main
// host) on addr and returns where it listens.
func startEcho(t *testing.T, addr string) string {
	t.Helper()
	s, err := newEchoServer(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	return s.addr()
}

// agent is an agent process in a host, seen from the test.
type agent struct {
	t      *testing.T
	host   *netnstest.Host
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *bytes.Buffer
}

// newAgent makes an agent process for host h; start starts it.
func newAgent(t *testing.T, h *netnstest.Host, ctx context.Context) *agent {
	t.Helper()
	cmd := h.Command(ctx, os.Args[0], "-test.run=^TestAgent$", "-test.count=1")
	cmd.Env = append(os.Environ(), agentEnv+"=1")
	a := &agent{t: t, host: h, cmd: cmd, stderr: &bytes.Buffer{}}
	cmd.Stderr = a.stderr
	var err error
	if a.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	a.out = bufio.NewReader(out)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return a
}

// startAgent starts an agent in host h that ends with the test (its
// stdin closed, and it waited for) before the host is removed.
func startAgent(t *testing.T, h *netnstest.Host) *agent {
	t.Helper()
	a := newAgent(t, h, context.Background())
	t.Cleanup(func() {
		a.in.Close()
		if err := waitFor(a.cmd); err != nil {
			t.Errorf("agent in host %s: %v\n%s", h.Name(), err, a.stderr)
		}
	})
	return a
}

// waitFor waits for cmd, killing its process group if it has not ended
// within the generous bound.
func waitFor(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(generous):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return fmt.Errorf("did not end within %v; killed", generous)
	}
}

// do sends one command and returns the answer.
func (a *agent) do(cmd string) string {
	a.t.Helper()
	if _, err := io.WriteString(a.in, cmd+"\n"); err != nil {
		a.t.Fatalf("agent in host %s: %s: %v\n%s", a.host.Name(), cmd, err, a.stderr)
	}
	s, err := a.out.ReadString('\n')
	if err != nil {
		a.t.Fatalf("agent in host %s: %s: %v\n%s", a.host.Name(), cmd, err, a.stderr)
	}
	return strings.TrimSuffix(s, "\n")
}

// want sends cmd and fails the test unless the answer starts with
// prefix.
func (a *agent) want(cmd, prefix string) string {
	a.t.Helper()
	got := a.do(cmd)
	if !strings.HasPrefix(got, prefix) {
		a.t.Fatalf("host %s: %s: got %q, want %q…", a.host.Name(), cmd, got, prefix)
	}
	return got
}

// eventually sends cmd until the answer is "ok…", within the generous
// bound: for what must work once the network is up.
func (a *agent) eventually(cmd string) string {
	a.t.Helper()
	deadline := time.Now().Add(generous)
	for {
		got := a.do(cmd)
		if strings.HasPrefix(got, "ok") {
			return got
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("host %s: %s: still %q after %v", a.host.Name(), cmd, got, generous)
		}
		time.Sleep(50 * time.Millisecond) // poll: a refusal comes back at once
	}
}
