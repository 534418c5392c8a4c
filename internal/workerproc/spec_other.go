//go:build !unix

package workerproc

import (
	"os"
	"os/exec"
)

// specPass hands a worker its spec in a file, removed once the worker has
// read it (without inherited descriptors to pass it through).
type specPass struct {
	arg string // the worker's --spec: the file
}

// passSpec writes spec to a file in dir (default: the temporary directory)
// for cmd to read.
func passSpec(_ *exec.Cmd, dir string, spec []byte) (*specPass, error) {
	f, err := os.CreateTemp(dir, "gale-worker-spec-*.json")
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(spec); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return nil, err
	}
	return &specPass{arg: f.Name()}, nil
}

func (s *specPass) started() {}
func (s *specPass) abort()   { os.Remove(s.arg) }
func (s *specPass) done()    { os.Remove(s.arg) }
