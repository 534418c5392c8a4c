package stock

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNimbusNeedsADir(t *testing.T) {
	code, _, stderr := runGale(t, "nimbus", "--etcd", "http://127.0.0.1:1")
	if code != exitUsage || !strings.Contains(stderr, "--dir is required") {
		t.Errorf("gale nimbus without --dir: exit %d, stderr %q; want %d and --dir is required", code, stderr, exitUsage)
	}
}

func TestNimbusRefusesOffLoopbackWithoutAToken(t *testing.T) {
	code, _, stderr := runGale(t, "nimbus", "--dir", t.TempDir(), "--host", "0.0.0.0", "--etcd", "http://127.0.0.1:1")
	if code != exitRuntime || !strings.Contains(stderr, "nimbus.auth.token") || !strings.Contains(stderr, "0.0.0.0:6627") {
		t.Errorf("gale nimbus --host 0.0.0.0 without a token: exit %d, stderr %q; want %d naming the address and nimbus.auth.token", code, stderr, exitRuntime)
	}
}

// gale nimbus takes isolation.scheduler.machines from --file's gale.yaml,
// through the config registry: a bad entry stops it before it dials etcd.
func TestNimbusRefusesABadIsolationEntry(t *testing.T) {
	f := filepath.Join(t.TempDir(), "gale.yaml")
	if err := os.WriteFile(f, []byte("isolation.scheduler.machines:\n  billing: 1\n  wordcount: two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runGale(t, "nimbus", "--dir", t.TempDir(), "--file", f, "--etcd", "http://127.0.0.1:1")
	const want = `"isolation.scheduler.machines" in gale.yaml must be a mapping of names to integers, got string "two" for "wordcount"`
	if code != exitRuntime || !strings.Contains(stderr, want) {
		t.Errorf("gale nimbus with wordcount: two: exit %d, stderr %q; want %d and %s", code, stderr, exitRuntime, want)
	}
}
