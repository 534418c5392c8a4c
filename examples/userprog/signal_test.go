//go:build unix

package main

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestRunInterrupt runs the program until SIGINT, as Ctrl-C stops it, in
// this process and in two workers: once it has acked readings, the signal
// stops it in order and it prints its report and exits 0.
func TestRunInterrupt(t *testing.T) {
	for _, workers := range []string{"1", "2"} {
		t.Run("workers="+workers, func(t *testing.T) {
			p := start(t, "run", "sensors", "--workers", workers)
			p.WaitLine(t, "a live line with acked readings", func(l string) bool {
				f := strings.Fields(l)
				for i := 0; i+1 < len(f); i++ {
					if f[i] == "acked" {
						n, err := strconv.Atoi(f[i+1])
						return err == nil && n > 0
					}
				}
				return false
			})
			if err := p.Cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			if code := p.Wait(t).ExitCode(); code != 0 {
				t.Fatalf("exit code %d, want 0", code)
			}
			out := p.Stdout.String()
			t.Logf("stdout:\n%s", out)
			if !strings.Contains(out, "stopped by  signal") {
				t.Errorf("the report does not say a signal stopped it")
			}
			var row []string
			for _, line := range strings.Split(out, "\n") {
				if f := strings.Fields(line); len(f) >= 6 && f[0] == "readings" {
					row = f
				}
			}
			// readings  tasks  emitted  acked  failed  pending  [max pending]
			if row == nil || row[2] != row[3] || row[3] == "0" || row[4] != "0" || row[5] != "0" {
				t.Errorf("readings row %q: want emitted = acked > 0, failed 0, pending 0", row)
			}
		})
	}
}
