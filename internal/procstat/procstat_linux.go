package procstat

import (
	"fmt"
	"sync"

	"github.com/prometheus/procfs"
)

// procFS is /proc, opened once; an error wraps ErrUnsupported: /proc is
// not mounted.
var procFS = sync.OnceValues(func() (procfs.FS, error) {
	fs, err := procfs.NewFS(procfs.DefaultMountPoint)
	if err != nil {
		return procfs.FS{}, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return fs, nil
})

// process is /proc/PID, or /proc/self for self.
func process(pid int, self bool) (procfs.Proc, error) {
	fs, err := procFS()
	if err != nil {
		return procfs.Proc{}, err
	}
	if self {
		return fs.Self()
	}
	return fs.Proc(pid)
}

// rss is field 24 of /proc/self/stat in bytes: the resident pages that
// /proc/self/statm and VmRSS count too.
func rss() (int64, error) {
	p, err := process(0, true)
	if err != nil {
		return 0, err
	}
	s, err := p.Stat()
	if err != nil {
		return 0, err
	}
	return int64(s.ResidentMemory()), nil
}

// cpuTicks is utime + stime, fields 14 and 15 of /proc/PID/stat, in
// clock ticks.
func cpuTicks(pid int) (int64, error) {
	p, err := process(pid, false)
	if err != nil {
		return 0, err
	}
	s, err := p.Stat()
	if err != nil {
		return 0, err
	}
	return int64(s.UTime + s.STime), nil
}

func cmdline(pid int) ([]string, error) {
	p, err := process(pid, false)
	if err != nil {
		return nil, err
	}
	return p.CmdLine()
}

// list reads every process's command line from /proc.
func list() ([]Process, error) {
	fs, err := procFS()
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	all, err := fs.AllProcs()
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var out []Process
	for _, p := range all {
		args, err := p.CmdLine()
		if err != nil {
			continue // exited since the listing, or not ours to see
		}
		if len(args) > 0 { // a kernel thread has none
			out = append(out, Process{PID: p.PID, Args: args})
		}
	}
	return out, nil
}
