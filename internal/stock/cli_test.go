package stock

import (
	"strings"
	"testing"
)

// TestBenchExitCodes: bench's bad command lines exit 2 naming what is
// wrong; bench alone shows its help.
func TestBenchExitCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		code int
		// stderr must contain each of these.
		stderr []string
	}{
		{name: "bench alone shows help", args: []string{"bench"}, code: exitOK},
		{name: "unknown bench", args: []string{"bench", "frob"}, code: exitUsage, stderr: []string{`"frob"`, "gale bench --help"}},
		{name: "help on a topic", args: []string{"help", "bench"}, code: exitOK},
		{name: "positional argument", args: []string{"bench", "wordcount", "extra"}, code: exitUsage, stderr: []string{`"extra"`}},
		{name: "bad mode", args: []string{"bench", "wordcount", "--mode", "fast"}, code: exitUsage, stderr: []string{"--mode", `"fast"`}},
		{name: "bad runner", args: []string{"bench", "wordcount", "--runner", "fast"}, code: exitUsage, stderr: []string{"--runner"}},
		{name: "zero spouts", args: []string{"bench", "wordcount", "--spouts", "0"}, code: exitUsage, stderr: []string{"--spouts"}},
		{name: "spouts not a number", args: []string{"bench", "wordcount", "--spouts", "abc"}, code: exitUsage, stderr: []string{"--spouts"}},
		{name: "negative duration", args: []string{"bench", "wordcount", "--duration", "-1s"}, code: exitUsage, stderr: []string{"--duration"}},
		{name: "duration without unit", args: []string{"bench", "wordcount", "--duration", "1.5"}, code: exitUsage, stderr: []string{"--duration"}},
		{name: "gogc too low", args: []string{"bench", "wordcount", "--gogc", "10"}, code: exitUsage, stderr: []string{"--gogc"}},
		{name: "gogc not a number", args: []string{"bench", "wordcount", "--gogc", "of"}, code: exitUsage, stderr: []string{"--gogc", `"off"`}},
		{name: "heap budget too small", args: []string{"bench", "wordcount", "--heap-mb", "16"}, code: exitUsage, stderr: []string{"--heap-mb", "64"}},
		{name: "ack mode without ackers", args: []string{"bench", "wordcount", "--ackers", "0"}, code: exitUsage, stderr: []string{"--ackers"}},
		{
			name:   "every bad flag is reported",
			args:   []string{"bench", "wordcount", "--mode", "fast", "--spouts", "0", "--duration", "-1s", "--gogc", "10"},
			code:   exitUsage,
			stderr: []string{"--mode", "--spouts", "--duration", "--gogc"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runGale(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit code: got %d, want %d", code, tt.code)
			}
			for _, want := range tt.stderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr does not contain %q", want)
				}
			}
			if tt.code == exitOK {
				if !strings.Contains(stdout, "Usage:") {
					t.Errorf("stdout has no help (no %q):\n%s", "Usage:", stdout)
				}
				if stderr != "" {
					t.Errorf("stderr: got %q, want nothing", stderr)
				}
			}
		})
	}
}
