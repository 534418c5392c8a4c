package cli

import (
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
)

func TestExitCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		code int
		// stderr must contain each of these.
		stderr []string
	}{
		{name: "no args shows help", args: nil, code: exitOK},
		{name: "config alone shows help", args: []string{"config"}, code: exitOK},
		{name: "unknown command", args: []string{"frobnicate"}, code: exitUsage, stderr: []string{`"frobnicate"`, "gale --help"}},
		{name: "unknown config subcommand", args: []string{"config", "shw"}, code: exitUsage, stderr: []string{`"shw"`}},
		{name: "help on an unknown topic", args: []string{"help", "frob"}, code: exitUsage, stderr: []string{`unknown help topic "frob"`}},
		{name: "unknown flag", args: []string{"--bogus"}, code: exitUsage, stderr: []string{"--bogus"}},
		{name: "help on a topic", args: []string{"help", "config"}, code: exitOK},
		// The stock gale's commands (internal/stock) are not a user's
		// program's.
		{name: "no bench", args: []string{"bench"}, code: exitUsage, stderr: []string{`unknown command "bench"`}},
		{name: "no dev", args: []string{"dev"}, code: exitUsage, stderr: []string{`unknown command "dev"`}},
		{name: "no etcd", args: []string{"etcd"}, code: exitUsage, stderr: []string{`unknown command "etcd"`}},
		{name: "no nimbus", args: []string{"nimbus"}, code: exitUsage, stderr: []string{`unknown command "nimbus"`}},
		{name: "version takes no arguments", args: []string{"version", "x"}, code: exitUsage, stderr: []string{`"x"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runGale(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit code: got %d, want %d", code, tt.code)
			}
			for _, want := range tt.stderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr does not contain %q", want)
				}
			}
			if tt.code == exitOK {
				if !strings.Contains(stdout, "Usage:") {
					t.Errorf("stdout has no help (no %q):\n%s", "Usage:", stdout)
				}
				if stderr != "" {
					t.Errorf("stderr: got %q, want nothing", stderr)
				}
			}
		})
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	t.Run("text", func(t *testing.T) {
		t.Parallel()
		code, stdout, _ := runGale(t, "version")
		if code != exitOK {
			t.Fatalf("exit code: got %d, want %d", code, exitOK)
		}
		if !strings.HasPrefix(stdout, "gale "+version) || !strings.Contains(stdout, runtime.Version()) {
			t.Errorf("stdout: got %q, want gale %s ... %s ...", stdout, version, runtime.Version())
		}
	})
	t.Run("json", func(t *testing.T) {
		t.Parallel()
		code, stdout, _ := runGale(t, "version", "--json")
		if code != exitOK {
			t.Fatalf("exit code: got %d, want %d", code, exitOK)
		}
		var v struct {
			Version   string `json:"version"`
			GoVersion string `json:"go_version"`
		}
		decodeOne(t, stdout, &v)
		if v.Version != version {
			t.Errorf("version: got %q, want %q", v.Version, version)
		}
		if v.GoVersion != runtime.Version() {
			t.Errorf("go_version: got %q, want %q", v.GoVersion, runtime.Version())
		}
	})
}

// decodeOne decodes s, which must be exactly one JSON document, into v.
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

// TestProgramName: messages name the program as the user invoked it.
// (examples/userprog's tests run Main in a built program.)
func TestProgramName(t *testing.T) {
	tests := []struct{ arg0, want string }{
		{"/usr/local/bin/clicks", "clicks"},
		{"./clicks", "clicks"},
		{"clicks.exe", "clicks"},
		{"gale", "gale"},
		{"", "gale"},
	}
	for _, tt := range tests {
		if got := ProgramName(tt.arg0); got != tt.want {
			t.Errorf("ProgramName(%q): got %q, want %q", tt.arg0, got, tt.want)
		}
	}
}
