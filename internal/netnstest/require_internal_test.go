package netnstest

import "testing"

func TestMustRunUnderCI(t *testing.T) {
	for _, tc := range []struct {
		ci   string
		want bool
	}{
		{"", false},
		{"true", true},
		{"1", true},
		{"TRUE", true},
		{"false", false},
		{"0", false},
		{"yes", false}, // not a boolean ParseBool knows: skip, as without CI
	} {
		if got := mustRun(tc.ci); got != tc.want {
			t.Errorf("CI=%q: mustRun got %v, want %v", tc.ci, got, tc.want)
		}
	}
}
