// Package proclist finds the processes whose command line names a path
// under a directory (Under), or whose program lies under it (Running):
// how `gale dev` finds the worker processes its supervisors started
// (they run an artifact, with a spec, kept under the supervisor's
// directory), which outlive a supervisor by design.
package proclist

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// Proc is a process.
type Proc struct {
	PID int
	// Args is its command line; where the system gives it as one string
	// (ps), one element.
	Args []string
}

// ErrUnsupported is returned where processes cannot be listed.
var ErrUnsupported = errors.New("proclist: listing processes is not supported on this system")

// Under returns the processes other than this one with an argument that
// is dir or a path under it (dir made absolute and clean), in no order.
func Under(dir string) ([]Proc, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	all, err := list()
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var out []Proc
	for _, p := range all {
		if p.PID != self && names(p.Args, abs) {
			out = append(out, p)
		}
	}
	return out, nil
}

// Running returns the processes other than this one whose program (the
// first argument) is a path under dir (made absolute and clean), in no
// order: the workers a supervisor started from the artifacts under its
// directory, and not a process that merely names a path there (a
// `timeout … gale demo --dir DIR` around the cluster, a `tail -f` of a
// log in it).
func Running(dir string) ([]Proc, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	all, err := list()
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	under := abs + string(filepath.Separator)
	var out []Proc
	for _, p := range all {
		// Where the system gives the command line as one string, it
		// starts with the program.
		if p.PID != self && len(p.Args) > 0 && strings.HasPrefix(p.Args[0], under) {
			out = append(out, p)
		}
	}
	return out, nil
}

// names says whether an argument is dir or contains a path under it
// ("--spec=/d/x", "/d/artifact").
func names(args []string, dir string) bool {
	under := dir + string(filepath.Separator)
	for _, a := range args {
		if a == dir || strings.HasSuffix(a, "="+dir) || strings.Contains(a, under) {
			return true
		}
	}
	return false
}
