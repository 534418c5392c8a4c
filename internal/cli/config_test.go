package cli

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gale-stream/gale/internal/cli/clitest"
)

const timeoutKey = "topology.message.timeout.secs"

func TestConfigShow(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runGale(t, "config", "show")
	if code != exitOK {
		t.Fatalf("exit code: got %d, want %d", code, exitOK)
	}
	if stderr != "" {
		t.Errorf("stderr: got %q, want nothing", stderr)
	}
	row := tableRow(stdout, timeoutKey)
	if row == nil {
		t.Fatalf("no %s row in:\n%s", timeoutKey, stdout)
	}
	if got := row[1:3]; got[0] != "30" || got[1] != "default" {
		t.Errorf("%s: got value %s, source %s; want 30, default", timeoutKey, got[0], got[1])
	}
}

func TestConfigShowJSON(t *testing.T) {
	t.Parallel()
	code, stdout, _ := runGale(t, "config", "show", "--json")
	if code != exitOK {
		t.Fatalf("exit code: got %d, want %d", code, exitOK)
	}
	var rows []struct {
		Key    string `json:"key"`
		Value  any    `json:"value"`
		Source string `json:"source"`
	}
	clitest.DecodeOne(t, stdout, &rows)
	for _, r := range rows {
		if r.Key == timeoutKey {
			if r.Value != float64(30) || r.Source != "default" {
				t.Errorf("%s: got value %v, source %q; want 30, default", timeoutKey, r.Value, r.Source)
			}
			return
		}
	}
	t.Errorf("no %q among %d keys", timeoutKey, len(rows))
}

func TestConfigShowFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	t.Run("file value", func(t *testing.T) {
		t.Parallel()
		f := write("ok.yaml", timeoutKey+": 60\n")
		code, stdout, _ := runGale(t, "config", "show", "--file", f)
		if code != exitOK {
			t.Fatalf("exit code: got %d, want %d", code, exitOK)
		}
		if row := tableRow(stdout, timeoutKey); row == nil || row[1] != "60" || row[2] != "gale.yaml" {
			t.Errorf("%s row: got %q, want value 60 from gale.yaml", timeoutKey, row)
		}
	})

	t.Run("isolation mapping", func(t *testing.T) {
		t.Parallel()
		const key = "isolation.scheduler.machines"
		f := write("iso.yaml", key+":\n  wordcount: 2\n  billing: 1\n")
		code, stdout, stderr := runGale(t, "config", "show", "--file", f)
		if code != exitOK {
			t.Fatalf("exit code: got %d, want %d; stderr %q", code, exitOK, stderr)
		}
		if row := tableLine(stdout, key); !strings.Contains(row, "{billing: 1, wordcount: 2}") || !strings.Contains(row, "gale.yaml") || !strings.HasSuffix(row, "cluster") {
			t.Errorf("%s row: got %q, want {billing: 1, wordcount: 2} from gale.yaml, scope cluster", key, row)
		}
		code, stdout, _ = runGale(t, "config", "show", "--file", f, "--json")
		if code != exitOK {
			t.Fatalf("--json exit code: got %d, want %d", code, exitOK)
		}
		type row struct {
			Key    string `json:"key"`
			Value  any    `json:"value"`
			Source string `json:"source"`
		}
		var rows []row
		clitest.DecodeOne(t, stdout, &rows)
		i := slices.IndexFunc(rows, func(r row) bool { return r.Key == key })
		if i < 0 {
			t.Fatalf("--json: no %q among %d keys", key, len(rows))
		}
		// A JSON object, whose numbers decode as float64.
		if r := rows[i]; !reflect.DeepEqual(r.Value, map[string]any{"wordcount": 2.0, "billing": 1.0}) || r.Source != "gale.yaml" {
			t.Errorf("--json %s: got value %#v, source %q; want {\"billing\": 1, \"wordcount\": 2}, gale.yaml", key, r.Value, r.Source)
		}

		code, stdout, _ = runGale(t, "config", "show")
		if row := tableLine(stdout, key); code != exitOK || !strings.Contains(row, "{}") || !strings.Contains(row, "default") {
			t.Errorf("without --file: exit %d, %s row %q; want {} from default", code, key, row)
		}

		bad := write("iso-bad.yaml", key+":\n  wordcount: 0\n")
		code, stdout, stderr = runGale(t, "config", "show", "--file", bad)
		want := `"isolation.scheduler.machines" in gale.yaml must map names to integers ≥ 1, got 0 for "wordcount"`
		if code != exitRuntime || !strings.Contains(stderr, want) || stdout != "" {
			t.Errorf("wordcount: 0: exit %d, stdout %q, stderr %q; want %d, nothing and %s", code, stdout, stderr, exitRuntime, want)
		}
	})

	t.Run("unknown key and wrong type", func(t *testing.T) {
		t.Parallel()
		f := write("bad.yaml", "topology.message.timeout.sec: 10\ntopology.workers: two\n")
		code, stdout, stderr := runGale(t, "config", "show", "--file", f)
		if code != exitRuntime {
			t.Errorf("exit code: got %d, want %d", code, exitRuntime)
		}
		for _, want := range []string{
			`"topology.message.timeout.sec"`,                // the unknown key
			`did you mean "topology.message.timeout.secs"?`, // the near key
			`"topology.workers"`,                            // the wrong type
			`"two"`,
		} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr does not contain %q", want)
			}
		}
		if stdout != "" {
			t.Errorf("stdout: got %q, want nothing", stdout)
		}
	})

	t.Run("integer beyond 64 bits", func(t *testing.T) {
		t.Parallel()
		f := write("big.yaml", "topology.workers: 99999999999999999999\n")
		code, stdout, stderr := runGale(t, "config", "show", "--file", f)
		if code != exitRuntime {
			t.Errorf("exit code: got %d, want %d", code, exitRuntime)
		}
		want := `"topology.workers" in gale.yaml is out of range: must be ≥ 1 and ≤ 9223372036854775807, got number 99999999999999999999`
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr: got %q, want it to contain %q", stderr, want)
		}
		if stdout != "" {
			t.Errorf("stdout: got %q, want nothing", stdout)
		}
	})

	t.Run("binary file", func(t *testing.T) {
		t.Parallel()
		exe, err := os.Executable() // the test binary: a file that is not text
		if err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runGale(t, "config", "show", "--file", exe)
		if code != exitRuntime {
			t.Errorf("exit code: got %d, want %d", code, exitRuntime)
		}
		if !strings.Contains(stderr, exe+" is not a text file") {
			t.Errorf("stderr: got %q, want it to say %s is not a text file", stderr, exe)
		}
		for i, r := range stderr {
			if r < ' ' && r != '\n' || r == 0x7f || r == utf8.RuneError {
				t.Fatalf("stderr has %U at byte %d, want text only: %q", r, i, stderr)
			}
		}
		if len(stderr) > 400 || stdout != "" {
			t.Errorf("got %d bytes on stderr, %d on stdout; want one short error line", len(stderr), len(stdout))
		}
	})

	t.Run("missing file", func(t *testing.T) {
		t.Parallel()
		f := filepath.Join(dir, "missing.yaml")
		code, _, stderr := runGale(t, "config", "show", "--file", f)
		if code != exitRuntime {
			t.Errorf("exit code: got %d, want %d", code, exitRuntime)
		}
		if !strings.Contains(stderr, f) {
			t.Errorf("stderr does not name the path %q", f)
		}
	})
}

// tableLine returns the table line whose first field is key, or "".
func tableLine(table, key string) string {
	for _, line := range strings.Split(table, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == key {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// tableRow returns the fields of the table line whose first field is key, or nil.
func tableRow(table, key string) []string {
	for _, line := range strings.Split(table, "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == key {
			return f
		}
	}
	return nil
}
