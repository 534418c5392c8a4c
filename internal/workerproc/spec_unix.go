//go:build unix

package workerproc

import (
	"os"
	"os/exec"
	"strconv"
)

// specPass hands a worker its spec through a pipe the worker inherits: no
// file holds it, so nothing is left behind whatever happens to the
// launcher, SIGKILL included.
type specPass struct {
	arg   string // the worker's --spec: /dev/fd/N
	spec  []byte
	r, w  *os.File
	wrote chan struct{} // closed when the writer has ended
}

// passSpec arranges for cmd, not started yet, to read spec from the
// returned pass's arg.
func passSpec(cmd *exec.Cmd, _ string, spec []byte) (*specPass, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, r)
	fd := 2 + len(cmd.ExtraFiles) // ExtraFiles[i] is descriptor 3+i in the child
	return &specPass{arg: "/dev/fd/" + strconv.Itoa(fd), spec: spec, r: r, w: w}, nil
}

// started writes the spec once the worker runs, from a goroutine that
// ends when the worker has read it all or is gone (done waits for it).
func (s *specPass) started() {
	s.r.Close() // the worker's copy is its own
	s.wrote = make(chan struct{})
	go func() {
		defer close(s.wrote)
		s.w.Write(s.spec) // fails only if the worker is gone, which the launcher sees anyway
		s.w.Close()
	}()
}

// abort releases the pass of a worker that did not start.
func (s *specPass) abort() {
	s.r.Close()
	s.w.Close()
}

// done waits for the writer; call it once the worker has read its spec
// (it reported listening) or has been reaped.
func (s *specPass) done() { <-s.wrote }
