package supervisor

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/gale-stream/gale/internal/workerproc"
)

// The test binary is also the artifact the supervisor tests run: with
// GALE_SUPERVISOR_TEST_WORKER set it is `ARTIFACT worker --spec FILE`.
func TestMain(m *testing.M) {
	if os.Getenv("GALE_SUPERVISOR_TEST_WORKER") == "1" {
		args := os.Args[1:]
		if len(args) > 0 && args[0] == "worker" {
			args = args[1:]
		}
		os.Exit(workerproc.RunProcess("supervisor test worker", args))
	}
	if os.Getenv(hogEnv) == "1" {
		hog()
	}
	goleak.VerifyTestMain(m)
}

// hogEnv makes the test binary a process with a large heap that waits to
// be killed (hog): one whose exit takes a while, tearing its memory down.
const hogEnv = "GALE_SUPERVISOR_TEST_HOG"

func hog() {
	b := make([]byte, 128<<20)
	for i := range b {
		if i%4096 == 0 {
			b[i] = 1
		}
	}
	os.Stdout.WriteString("ready\n")
	os.Stdin.Read(make([]byte, 1)) // until killed
	os.Stdout.Write(b[:1])
	os.Exit(0)
}
