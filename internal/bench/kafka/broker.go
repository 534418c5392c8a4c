package kafka

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/gale-stream/gale/internal/procstat"
)

// brokerReady is the line ServeBroker prints once it listens, before the
// address.
const brokerReady = "kafka broker listening on "

// ServeBroker runs an in-process Kafka cluster of one broker on
// 127.0.0.1 (franz-go's kfake) with topics made with partitions
// partitions each, writes "kafka broker listening on HOST:PORT" and a
// newline to out, and serves until in ends (EOF: the parent closed the
// pipe, or died) or ctx does. It is the body of the bench's broker child
// process, so that the broker's CPU is not the bench's.
func ServeBroker(ctx context.Context, partitions int, topics []string, in io.Reader, out io.Writer) error {
	if partitions < 1 {
		return fmt.Errorf("benchkafka: partitions must be ≥ 1, got %d", partitions)
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(partitions), topics...),
		kfake.AllowAutoTopicCreation())
	if err != nil {
		return fmt.Errorf("benchkafka: start kfake: %w", err)
	}
	defer c.Close()
	if _, err := fmt.Fprintf(out, "%s%s\n", brokerReady, c.ListenAddrs()[0]); err != nil {
		return err
	}
	eof := make(chan struct{})
	go func() { // ends when in does: at the latest when the process exits
		_, _ = io.Copy(io.Discard, in)
		close(eof)
	}()
	select {
	case <-eof:
	case <-ctx.Done():
	}
	return nil
}

// Broker is a kfake broker in a child process (ServeBroker), started by
// StartBroker. It dies with its parent: its stdin is a pipe from this
// process, whose end closes when this process exits however it exits.
type Broker struct {
	// Addr is the broker's HOST:PORT.
	Addr string

	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{} // closed once it exited and its stderr was read
	err   error         // how it exited, set before done closes
	mu    struct {
		sync.Mutex
		tail []string // its last lines of stderr, for errors
	}
}

// brokerStartTimeout bounds a broker's start.
const brokerStartTimeout = time.Minute

// StartBroker runs exe with args (and env added to this process's
// environment) as the broker child, which must call ServeBroker with its
// stdin and stdout, and returns once it listens.
func StartBroker(ctx context.Context, exe string, args, env []string) (*Broker, error) {
	b := &Broker{done: make(chan struct{})}
	b.cmd = exec.Command(exe, args...)
	b.cmd.Env = append(os.Environ(), env...)
	var err error
	if b.stdin, err = b.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := b.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := b.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := b.cmd.Start(); err != nil {
		return nil, fmt.Errorf("benchkafka: start the broker: %w", err)
	}
	ready := make(chan string, 1)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // ends at the child's EOF on stdout
		defer wg.Done()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), brokerReady); ok {
				select {
				case ready <- strings.TrimSpace(a):
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() { // ends at the child's EOF on stderr
		defer wg.Done()
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			b.mu.Lock()
			if b.mu.tail = append(b.mu.tail, sc.Text()); len(b.mu.tail) > 10 {
				b.mu.tail = b.mu.tail[1:]
			}
			b.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	go func() { // owned by the Broker: done closes once the child has exited
		wg.Wait()
		b.err = b.cmd.Wait()
		close(b.done)
	}()
	tm := time.NewTimer(brokerStartTimeout)
	defer tm.Stop()
	select {
	case b.Addr = <-ready:
		return b, nil
	case <-b.done:
		return nil, fmt.Errorf("benchkafka: the broker (pid %d) exited before it listened: %v; its last lines: %s", b.cmd.Process.Pid, b.err, b.tail())
	case <-ctx.Done():
		err = ctx.Err()
	case <-tm.C:
		err = fmt.Errorf("benchkafka: the broker (pid %d) did not listen within %s; its last lines: %s", b.cmd.Process.Pid, brokerStartTimeout, b.tail())
	}
	_ = b.Close()
	return nil, err
}

// CPU is the CPU time the broker process has used so far (Linux only;
// elsewhere an error).
func (b *Broker) CPU() (time.Duration, error) { return procstat.CPU(b.cmd.Process.Pid) }

// Exited is closed once the broker process has exited.
func (b *Broker) Exited() <-chan struct{} { return b.done }

func (b *Broker) tail() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.mu.tail) == 0 {
		return "(none)"
	}
	return strings.Join(b.mu.tail, " | ")
}

// brokerStopGrace is how long the broker has to exit after its stdin
// closes before it is killed.
const brokerStopGrace = 10 * time.Second

// Close ends the broker (closing its stdin, then killing it if it has
// not exited within 10 s) and waits for it. It is idempotent; it returns
// an error if the broker had to be killed or had failed.
func (b *Broker) Close() error {
	_ = b.stdin.Close()
	tm := time.NewTimer(brokerStopGrace)
	defer tm.Stop()
	select {
	case <-b.done:
	case <-tm.C:
		_ = b.cmd.Process.Kill()
		<-b.done
		return fmt.Errorf("benchkafka: the broker (pid %d) did not exit within %s of its stdin closing and was killed", b.cmd.Process.Pid, brokerStopGrace)
	}
	if b.err != nil {
		return fmt.Errorf("benchkafka: the broker (pid %d) failed: %v; its last lines: %s", b.cmd.Process.Pid, b.err, b.tail())
	}
	return nil
}
