// Package procstat is Gale's one reader of processes, its own and others: the
// resident set size of this process and the CPU time of any (RSS, CPU),
// the resource use getrusage(2) reports of this process and its children
// (SelfUsage, ChildrenUsage), a process's command line (Cmdline), and the
// processes whose command line names a path under a directory (Under), or
// whose program lies under it (Running): how `gale dev` finds the worker
// processes its supervisors started (they run an artifact, with a spec,
// kept under the supervisor's directory), which outlive a supervisor by
// design.
//
// On Linux it reads /proc through github.com/prometheus/procfs; other
// unix systems list processes with ps and have getrusage but no /proc;
// elsewhere each call returns an error wrapping ErrUnsupported.
package procstat

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Process is a process.
type Process struct {
	PID int
	// Args is its command line; where the system gives it as one string
	// (ps), one element.
	Args []string
}

// ErrUnsupported is wrapped by the errors of the calls this system cannot
// answer: /proc's where it is not mounted (every system but Linux),
// getrusage's outside unix, the listing of processes outside unix.
var ErrUnsupported = errors.New("not supported on this system")

// Cmdline returns process pid's command line, as /proc/PID/cmdline holds
// it, one element per argument (Linux only; elsewhere, and where /proc is
// not mounted, an error wrapping ErrUnsupported). A process that is
// exiting, or a kernel thread, has an empty one.
func Cmdline(pid int) ([]string, error) {
	args, err := cmdline(pid)
	if err != nil {
		return nil, fmt.Errorf("read the command line of pid %d: %w", pid, err)
	}
	return args, nil
}

// Under returns the processes other than this one with an argument that
// is dir or a path under it (dir made absolute and clean), in no order.
func Under(dir string) ([]Process, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	all, err := list()
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var out []Process
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
func Running(dir string) ([]Process, error) {
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
	var out []Process
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
