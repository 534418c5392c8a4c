package wordcount_test

import (
	"flag"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var seedFlag = flag.Uint64("seed", 0, "seed of the randomized tests; 0 picks one from the clock")

// testSeed returns the seed for a randomized test and logs how to replay it.
func testSeed(t *testing.T) uint64 {
	t.Helper()
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed %d)", seed, seed)
	return seed
}
