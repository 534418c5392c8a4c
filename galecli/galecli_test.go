package galecli

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
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
		if got := programName(tt.arg0); got != tt.want {
			t.Errorf("programName(%q): got %q, want %q", tt.arg0, got, tt.want)
		}
	}
}
