package stock

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/gale-stream/gale/internal/cli"
)

// TestMain checks that no command leaves a goroutine behind (os/signal's
// watcher, which Run starts and which lives for the rest of the process,
// is a standard-library goroutine to goleak).
//
// Run with galeMainEnv set, the test binary is the stock gale itself:
// `gale bench --workers`, dev and the benches start their worker, nimbus
// and supervisor processes from this binary.
func TestMain(m *testing.M) {
	if os.Getenv(galeMainEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}

const galeMainEnv = "GALE_CMD_TEST_AS_GALE"

// Exit codes, as internal/cli's.
const (
	exitOK      = 0
	exitRuntime = 1
	exitUsage   = 2
)

// testOptions are the command line under test: the stock gale.
var testOptions = Options(cli.Options{Name: "gale", Topologies: Topologies})

// run runs the command line under test.
func run(args []string, stdout, stderr io.Writer) int {
	return cli.Run(args, stdout, stderr, testOptions)
}

// syncBuffer is a bytes.Buffer safe for concurrent writes: a bench run writes
// its live lines (monitor goroutine) and warnings (executors) to stderr from
// different goroutines, as os.Stderr allows.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// runGale runs the command line args in this process and returns its exit code,
// stdout and stderr.
func runGale(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut syncBuffer
	code = run(args, &out, &errOut)
	stdout, stderr = out.String(), errOut.String()
	t.Logf("gale %s → exit %d\nstderr:\n%s", strings.Join(args, " "), code, stderr)
	return code, stdout, stderr
}

// decodeOne decodes s, a command's stdout, into v, failing the test
// unless s is exactly one JSON document.
func decodeOne(t *testing.T, s string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("stdout is not a JSON document: %v\n%s", err, s)
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		t.Fatalf("stdout has more than one JSON document (then %q, err %v):\n%s", extra, err, s)
	}
}
