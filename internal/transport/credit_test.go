package transport

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestCreditsRoundTrip(t *testing.T) {
	for _, cs := range [][]Credit{nil, {{Dest: 1, N: 2}}, {{Dest: 7, N: 1}, {Dest: 300, N: 1 << 20}, {Dest: 0, N: 5}}} {
		got, err := ParseCredits(AppendCredits(nil, cs), 1000, nil)
		if err != nil || !slices.Equal(got, cs) {
			t.Errorf("ParseCredits(AppendCredits(%v)) = %v, %v", cs, got, err)
		}
	}
}

func TestParseCreditsRejects(t *testing.T) {
	good := AppendCredits(nil, []Credit{{Dest: 3, N: 2}, {Dest: 9, N: 1 << 20}})
	for _, tt := range []struct {
		name string
		p    []byte
		want string
	}{
		{"empty", nil, "bad count"},
		{"hostile count", []byte{0xff, 0xff, 0xff, 0x0f}, "bad count"},
		{"truncated", good[:len(good)-1], "truncated"},
		{"destination outside the topology", AppendCredits(nil, []Credit{{Dest: 10, N: 1}}), "destination 10: the topology has 10 executors"},
		{"zero grant", AppendCredits(nil, []Credit{{Dest: 1, N: 0}}), "grant of 0 batches for destination 1"},
		{"huge grant", AppendCredits(nil, []Credit{{Dest: 1, N: 1<<20 + 1}}), "grant of 1048577"},
		{"trailing bytes", append(AppendCredits(nil, []Credit{{Dest: 1, N: 1}}), 0), "1 bytes after"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseCredits(tt.p, 10, nil)
			if !errors.Is(err, ErrMalformedFrame) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseCredits: %v, want ErrMalformedFrame saying %q", err, tt.want)
			}
		})
	}
}

func FuzzParseCredits(f *testing.F) {
	f.Add(AppendCredits(nil, []Credit{{Dest: 3, N: 2}, {Dest: 4, N: 1}}))
	f.Fuzz(func(t *testing.T, p []byte) {
		cs, err := ParseCredits(p, 1<<16, nil)
		if err != nil {
			return
		}
		if got, err := ParseCredits(AppendCredits(nil, cs), 1<<16, nil); err != nil || !slices.Equal(got, cs) {
			t.Fatalf("%v does not round-trip: %v, %v", cs, got, err)
		}
	})
}
