package cli

import (
	"maps"
	"strings"
	"testing"

	"github.com/gale-stream/gale"
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

func TestIsolationFrom(t *testing.T) {
	file := gale.Config{
		gale.NimbusSeeds: []any{"a"},
		isolationKey:     map[string]any{"wordcount": 2, "big": uint64(1)},
	}
	rest, iso, err := isolationFrom(file)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"wordcount": 2, "big": 1}; !maps.Equal(iso, want) {
		t.Errorf("isolation: got %v, want %v", iso, want)
	}
	if _, ok := rest[isolationKey]; ok || len(rest) != 1 {
		t.Errorf("rest: got %v, want only nimbus.seeds", rest)
	}
	if _, ok := file[isolationKey]; !ok {
		t.Error("isolationFrom changed its argument")
	}
	for _, bad := range []any{"two", map[string]any{"wc": 0}, map[string]any{"wc": "x"}} {
		if _, _, err := isolationFrom(gale.Config{isolationKey: bad}); err == nil || !strings.Contains(err.Error(), isolationKey) {
			t.Errorf("isolation %v: got %v, want an error naming the key", bad, err)
		}
	}
}
