package wordcount_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/gale-stream/gale/internal/testutil"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testSeed returns the seed for a randomized test and logs how to replay it.
func testSeed(t *testing.T) uint64 {
	t.Helper()
	return testutil.Seed(t)
}
