//go:build unix

package stock

import (
	"context"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gale-stream/gale/internal/cli/clitest"
	"github.com/gale-stream/gale/internal/coord"
)

// TestEtcdServesAndStops: `gale etcd` serves clients on the URL it
// prints, stops on SIGTERM, and keeps its data for a restart in the same
// directory.
func TestEtcdServesAndStops(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := func() (string, func()) {
		p := clitest.Start(t, "etcd", "--dir", dir, "--listen", "http://127.0.0.1:0")
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
	status := func() (idx, rev int64) {
		code, out, stderr := runGale(t, "etcd", "status", "--etcd", url, "--json")
		var st struct {
			RaftIndex int64 `json:"raft_index"`
			Revision  int64 `json:"revision"`
		}
		if code != exitOK || json.Unmarshal([]byte(out), &st) != nil {
			t.Fatalf("etcd status: exit %d, stdout %q, stderr %q", code, out, stderr)
		}
		return st.RaftIndex, st.Revision
	}
	idx0, rev0 := status()
	if _, err := c.Put(ctx, "/gale/test", "kept"); err != nil {
		t.Fatalf("put to %s: %v", url, err)
	}
	if idx, rev := status(); idx <= idx0 || rev != rev0+1 {
		t.Errorf("etcd status after a put: raft index %d → %d, revision %d → %d; want the index to move and the revision to move by 1", idx0, idx, rev0, rev)
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
