package kafka

import (
	"context"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/gale-stream/gale/galetest"
)

// brokerEnv makes the test binary the bench's broker child (ServeBroker
// on its stdin and stdout), as `gale bench kafka broker` is in gale.
const brokerEnv = "BENCHKAFKA_TEST_BROKER"

func TestMain(m *testing.M) {
	galetest.RunWorkerIfChild()
	if os.Getenv(brokerEnv) == "1" {
		if err := ServeBroker(context.Background(), 4, []string{Topic}, os.Stdin, os.Stdout); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
