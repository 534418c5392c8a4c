package jetstream_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no goroutine outlives the tests: the spout's
// fetcher, the clients' and the embedded servers' (each test waits for its
// server's shutdown).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
