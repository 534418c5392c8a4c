package devcluster

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"time"
)

// Watched is a command whose output is read line by line while it runs:
// each line goes to Line, and the first that Ready accepts to Ready(). It
// is how `gale dev` and internal/clustertest start a server and wait for
// its ready line. Set the fields, then Start.
type Watched struct {
	// Cmd is the command, not started. Start reads its stderr, and its
	// stdout too unless Cmd.Stdout is set.
	Cmd *exec.Cmd
	// Line gets each line of the output, in order; nil for none.
	Line func(line string)
	// Ready accepts the process's ready line.
	Ready func(line string) bool
	// Exited, if set, is called once the process has exited and its
	// output was read (Done is closed).
	Exited func()

	ready chan string
	done  chan struct{}
	err   error
}

// PipeGrace is how long the output of a process is read after it exited:
// a process it started (a supervisor's worker) may hold the pipe open.
const PipeGrace = 5 * time.Second

// Start starts the command. Two goroutines read its output and wait for
// it; both end once it has exited and its output was read, at the latest
// PipeGrace after its exit.
func (w *Watched) Start() error {
	w.ready = make(chan string, 1)
	w.done = make(chan struct{})
	// Wait waits only PipeGrace for a stdout the caller set, and the
	// reader below is cut off as long after the exit.
	w.Cmd.WaitDelay = PipeGrace
	r, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	w.Cmd.Stderr = pw
	if w.Cmd.Stdout == nil {
		w.Cmd.Stdout = pw
	}
	err = w.Cmd.Start()
	pw.Close()
	if err != nil {
		r.Close()
		return err
	}
	eof := make(chan struct{})
	go func() { // ends at the end of the output, or when r is closed
		defer close(eof)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		readied := false
		for sc.Scan() {
			l := sc.Text()
			if w.Line != nil {
				w.Line(l)
			}
			if !readied && w.Ready(l) {
				readied = true
				w.ready <- l
			}
		}
		io.Copy(io.Discard, r) // past a line too long
	}()
	go func() { // ends once the process has exited: done closes
		err := w.Cmd.Wait()
		tm := time.NewTimer(PipeGrace)
		select {
		case <-eof:
		case <-tm.C:
		}
		tm.Stop()
		r.Close()
		<-eof
		w.err = err
		close(w.done)
		if w.Exited != nil {
			w.Exited()
		}
	}()
	return nil
}

// ReadyLine gets the first line Ready accepted, once.
func (w *Watched) ReadyLine() <-chan string { return w.ready }

// Done is closed once the process has exited and its output was read.
func (w *Watched) Done() <-chan struct{} { return w.done }

// Err is how the process exited (Cmd.Wait's error), once Done is closed.
func (w *Watched) Err() error {
	<-w.done
	return w.err
}

// Running says whether the process has not exited.
func (w *Watched) Running() bool {
	select {
	case <-w.done:
		return false
	default:
		return true
	}
}

// PID is the process's id.
func (w *Watched) PID() int { return w.Cmd.Process.Pid }

// ExitReason says how a process exited, from its Wait error.
func ExitReason(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}
