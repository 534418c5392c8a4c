package cli

import (
	"runtime"
	"strings"
	"testing"

	"github.com/gale-stream/gale/internal/cli/clitest"
)

func TestExitCodes(t *testing.T) {
	t.Parallel()
	clitest.ExitCodes(t, run, []clitest.ExitCase{
		{Name: "no args shows help", Args: nil, Code: exitOK},
		{Name: "config alone shows help", Args: []string{"config"}, Code: exitOK},
		{Name: "unknown command", Args: []string{"frobnicate"}, Code: exitUsage, Stderr: []string{`"frobnicate"`, "gale --help"}},
		{Name: "unknown config subcommand", Args: []string{"config", "shw"}, Code: exitUsage, Stderr: []string{`"shw"`}},
		{Name: "help on an unknown topic", Args: []string{"help", "frob"}, Code: exitUsage, Stderr: []string{`unknown help topic "frob"`}},
		{Name: "unknown flag", Args: []string{"--bogus"}, Code: exitUsage, Stderr: []string{"--bogus"}},
		{Name: "help on a topic", Args: []string{"help", "config"}, Code: exitOK},
		// The stock gale's commands (internal/stock) are not a user's
		// program's.
		{Name: "no bench", Args: []string{"bench"}, Code: exitUsage, Stderr: []string{`unknown command "bench"`}},
		{Name: "no dev", Args: []string{"dev"}, Code: exitUsage, Stderr: []string{`unknown command "dev"`}},
		{Name: "no etcd", Args: []string{"etcd"}, Code: exitUsage, Stderr: []string{`unknown command "etcd"`}},
		{Name: "no nimbus", Args: []string{"nimbus"}, Code: exitUsage, Stderr: []string{`unknown command "nimbus"`}},
		{Name: "version takes no arguments", Args: []string{"version", "x"}, Code: exitUsage, Stderr: []string{`"x"`}},
	})
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
		clitest.DecodeOne(t, stdout, &v)
		if v.Version != version {
			t.Errorf("version: got %q, want %q", v.Version, version)
		}
		if v.GoVersion != runtime.Version() {
			t.Errorf("go_version: got %q, want %q", v.GoVersion, runtime.Version())
		}
	})
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
