//go:build unix

package procstat

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

func pids(ps []Process) []int {
	var out []int
	for _, p := range ps {
		out = append(out, p.PID)
	}
	return out
}

// TestUnder: a process with an argument under the directory is found,
// one with a path in a sibling directory is not, and neither once gone.
func TestUnder(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "cluster")
	start := func(arg string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$", arg)
		cmd.Env = append(os.Environ(), helperEnv+"=1")
		w, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			w.Close()
			cmd.Wait()
		})
		return cmd
	}
	in := start("--spec=" + filepath.Join(dir, "supervisor-0", "worker.json"))
	out := start(filepath.Join(root, "cluster2", "x"))

	got, err := Under(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ps := pids(got); !slices.Contains(ps, in.Process.Pid) || slices.Contains(ps, out.Process.Pid) || slices.Contains(ps, os.Getpid()) {
		t.Errorf("Under(%s): got pids %v, want %d and not %d (sibling) nor %d (this process)", dir, ps, in.Process.Pid, out.Process.Pid, os.Getpid())
	}
	if err := in.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	in.Wait()
	got, err = Under(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ps := pids(got); slices.Contains(ps, in.Process.Pid) {
		t.Errorf("Under(%s) after the process exited: got pids %v, want it gone", dir, ps)
	}
}

// TestRunning: a process whose program lies under the directory is
// found; one that only names a path there among its arguments is not.
func TestRunning(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cluster")
	prog := filepath.Join(dir, "supervisor-0", "artifacts", "abc")
	if err := os.MkdirAll(filepath.Dir(prog), 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prog, self, 0o755); err != nil {
		t.Fatal(err)
	}
	start := func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command(name, append([]string{"-test.run=^$"}, args...)...)
		cmd.Env = append(os.Environ(), helperEnv+"=1")
		w, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			w.Close()
			cmd.Wait()
		})
		return cmd
	}
	worker := start(prog, "--spec", filepath.Join(dir, "supervisor-0", "workers", "6700", "spec.json"))
	wrapper := start(os.Args[0], "--dir", dir, filepath.Join(dir, "supervisor-0", "worker.log"))
	got, err := Running(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ps := pids(got); !slices.Contains(ps, worker.Process.Pid) || slices.Contains(ps, wrapper.Process.Pid) {
		t.Errorf("Running(%s): got pids %v, want %d (its program under it) and not %d (names paths under it)", dir, ps, worker.Process.Pid, wrapper.Process.Pid)
	}
	under, err := Under(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ps := pids(under); !slices.Contains(ps, worker.Process.Pid) || !slices.Contains(ps, wrapper.Process.Pid) {
		t.Errorf("Under(%s): got pids %v, want both %d and %d", dir, ps, worker.Process.Pid, wrapper.Process.Pid)
	}
}
