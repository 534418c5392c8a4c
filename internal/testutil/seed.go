// Seeds for randomized tests: a seed they print and can replay, go test
// -run TestX -seed N.

package testutil

import (
	"flag"
	"testing"
	"time"
)

var seedFlag = flag.Uint64("seed", 0, "seed of the randomized tests; 0 picks one from the clock")

// Seed returns the seed for a randomized test and logs how to replay it.
func Seed(t testing.TB) uint64 {
	t.Helper()
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed %d)", seed, seed)
	return seed
}
