package stock

import (
	"testing"

	"github.com/gale-stream/gale/internal/cli/clitest"
)

// TestBenchExitCodes: bench's bad command lines exit 2 naming what is
// wrong; bench alone shows its help.
func TestBenchExitCodes(t *testing.T) {
	t.Parallel()
	clitest.ExitCodes(t, run, []clitest.ExitCase{
		{Name: "bench alone shows help", Args: []string{"bench"}, Code: exitOK},
		{Name: "unknown bench", Args: []string{"bench", "frob"}, Code: exitUsage, Stderr: []string{`"frob"`, "gale bench --help"}},
		{Name: "help on a topic", Args: []string{"help", "bench"}, Code: exitOK},
		{Name: "positional argument", Args: []string{"bench", "wordcount", "extra"}, Code: exitUsage, Stderr: []string{`"extra"`}},
		{Name: "bad mode", Args: []string{"bench", "wordcount", "--mode", "fast"}, Code: exitUsage, Stderr: []string{"--mode", `"fast"`}},
		{Name: "bad runner", Args: []string{"bench", "wordcount", "--runner", "fast"}, Code: exitUsage, Stderr: []string{"--runner"}},
		{Name: "zero spouts", Args: []string{"bench", "wordcount", "--spouts", "0"}, Code: exitUsage, Stderr: []string{"--spouts"}},
		{Name: "spouts not a number", Args: []string{"bench", "wordcount", "--spouts", "abc"}, Code: exitUsage, Stderr: []string{"--spouts"}},
		{Name: "negative duration", Args: []string{"bench", "wordcount", "--duration", "-1s"}, Code: exitUsage, Stderr: []string{"--duration"}},
		{Name: "duration without unit", Args: []string{"bench", "wordcount", "--duration", "1.5"}, Code: exitUsage, Stderr: []string{"--duration"}},
		{Name: "gogc too low", Args: []string{"bench", "wordcount", "--gogc", "10"}, Code: exitUsage, Stderr: []string{"--gogc"}},
		{Name: "gogc not a number", Args: []string{"bench", "wordcount", "--gogc", "of"}, Code: exitUsage, Stderr: []string{"--gogc", `"off"`}},
		{Name: "heap budget too small", Args: []string{"bench", "wordcount", "--heap-mb", "16"}, Code: exitUsage, Stderr: []string{"--heap-mb", "64"}},
		{Name: "ack mode without ackers", Args: []string{"bench", "wordcount", "--ackers", "0"}, Code: exitUsage, Stderr: []string{"--ackers"}},
		{
			Name:   "every bad flag is reported",
			Args:   []string{"bench", "wordcount", "--mode", "fast", "--spouts", "0", "--duration", "-1s", "--gogc", "10"},
			Code:   exitUsage,
			Stderr: []string{"--mode", "--spouts", "--duration", "--gogc"},
		},
	})
}
