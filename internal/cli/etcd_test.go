//go:build unix

package cli

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gale-stream/gale/internal/coord"
)

// TestEtcdServesAndStops: `gale etcd` serves clients on the URL it
// prints, stops on SIGTERM, and keeps its data for a restart in the same
// directory.
func TestEtcdServesAndStops(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := func() (string, func()) {
		p := startGale(t, "etcd", "--dir", dir, "--listen", "http://127.0.0.1:0")
		var url string
		p.WaitLine(t, "the serving line", func(l string) bool {
			const marker = "gale etcd: serving on "
			if i := strings.Index(l, marker); i >= 0 {
				url = strings.TrimSpace(l[i+len(marker):])
				return true
			}
			return false
		})
		stop := func() {
			if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if st := p.Wait(t); st.ExitCode() != exitOK {
				t.Errorf("after SIGTERM: %v, want exit 0", st)
			}
		}
		return url, stop
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	url, stop := start()
	c, err := coord.Dial([]string{url})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "/gale/test", "kept"); err != nil {
		t.Fatalf("put to %s: %v", url, err)
	}
	c.Close()
	stop()

	url, stop = start()
	defer stop()
	c, err = coord.Dial([]string{url})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.Get(ctx, "/gale/test")
	if err != nil {
		t.Fatalf("get from %s: %v", url, err)
	}
	if len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "kept" {
		t.Errorf("after a restart in the same --dir: got %v, want /gale/test = kept", r.Kvs)
	}
}

// TestEtcdNeedsDir: without --dir, etcd is a usage error.
func TestEtcdNeedsDir(t *testing.T) {
	t.Parallel()
	code, _, stderr := runGale(t, "etcd")
	if code != exitUsage || !strings.Contains(stderr, "--dir") {
		t.Errorf("exit %d, stderr %q: want %d and --dir named", code, stderr, exitUsage)
	}
}
