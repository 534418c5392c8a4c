//go:build unix

package devcluster

import (
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestWatched: a watched process's every line, stdout's and stderr's,
// reaches Line in order, its ready line ReadyLine, and its exit Err
// once Done is closed, after Exited has been called.
func TestWatched(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	exited := make(chan struct{})
	w := &Watched{
		Cmd: exec.Command("sh", "-c", "echo starting; echo 'gale nimbus: serving on 127.0.0.1:1 (id n1)' >&2; echo after; exit 3"),
		Line: func(l string) {
			mu.Lock()
			defer mu.Unlock()
			lines = append(lines, l)
		},
		Ready:  func(l string) bool { _, ok := NimbusReady(l); return ok },
		Exited: func() { close(exited) },
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	if l := <-w.ReadyLine(); !strings.HasPrefix(l, "gale nimbus: serving on ") {
		t.Errorf("ready line: got %q", l)
	}
	<-w.Done()
	<-exited
	if err := w.Err(); err == nil || !strings.Contains(ExitReason(err), "exit status 3") {
		t.Errorf("Err: got %v, want exit status 3", err)
	}
	if w.Running() {
		t.Error("Running after Done")
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"starting", "gale nimbus: serving on 127.0.0.1:1 (id n1)", "after"}
	if !slices.Equal(lines, want) {
		t.Errorf("lines: got %q, want %q", lines, want)
	}
}
