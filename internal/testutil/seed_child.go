package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// childEnv tells a re-run test binary which seed to compute for and
// where to write what it computed (ComputeInChild).
const childEnv = "GALE_TESTSEED_CHILD"

// SameInAnotherProcess checks that another process computes what this one
// does: it runs the test binary again with only childTest, which must
// call ComputeInChild with the same compute, and compares compute(seed)
// here with the child's, byte for byte. The child has its own heap, map
// seeds and scheduling, so what depends on them shows.
func SameInAnotherProcess(t *testing.T, childTest string, compute func(t *testing.T, seed uint64) []byte) {
	t.Helper()
	seed := Seed(t)
	out := filepath.Join(t.TempDir(), "child.out")
	cmd := exec.Command(os.Args[0], "-test.run=^"+childTest+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d:%s", childEnv, seed, out))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, b)
	}
	theirs, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if ours := compute(t, seed); string(ours) != string(theirs) {
		t.Fatalf("the child computed something else than this process:\nhere  %.300s\nchild %.300s", ours, theirs)
	}
}

// ComputeInChild is the body of the child test SameInAnotherProcess
// names: in the child it writes compute(seed) where the parent reads it;
// elsewhere it skips the test.
func ComputeInChild(t *testing.T, compute func(t *testing.T, seed uint64) []byte) {
	t.Helper()
	spec := os.Getenv(childEnv)
	if spec == "" {
		t.Skip("runs in the child process of a SameInAnotherProcess test")
	}
	seedStr, out, _ := strings.Cut(spec, ":")
	seed, err := strconv.ParseUint(seedStr, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, compute(t, seed), 0o644); err != nil {
		t.Fatal(err)
	}
}
