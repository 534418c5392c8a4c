package starter_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/gale-stream/gale/galetest"
)

func TestMain(m *testing.M) {
	// Run as a worker by galetest.StartWorkers (workers_test.go), this
	// process is that worker and exits here.
	galetest.RunWorkerIfChild()
	goleak.VerifyTestMain(m)
}
