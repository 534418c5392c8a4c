package transport

import (
	"errors"
	"strings"
	"testing"
)

func TestHelloRoundTrip(t *testing.T) {
	for _, h := range []Hello{
		{Version: ProtocolVersion, Topology: "wordcount-3-1732950000", Worker: "10.0.0.7:6701", Types: 0x0123456789abcdef, Assignment: "5f3a9c"},
		{Version: ProtocolVersion},
		{Version: ProtocolVersion, Topology: strings.Repeat("t", maxHelloString), Worker: "ü", Assignment: strings.Repeat("a", maxHelloString)},
	} {
		p := AppendHello(nil, h)
		got, err := ParseHello(p)
		if err != nil || got != h {
			t.Errorf("ParseHello(AppendHello(%+v)) = %+v, %v", h, got, err)
		}
		if len(p)+1 > MaxHelloFrame {
			t.Errorf("a hello of %d bytes is over MaxHelloFrame (%d)", len(p)+1, MaxHelloFrame)
		}
	}
	// The largest hello fits the first frame's bound exactly.
	big := strings.Repeat("x", maxHelloString)
	if n := len(AppendHello(nil, Hello{Version: ProtocolVersion, Topology: big, Worker: big, Assignment: big})) + 1; n > MaxHelloFrame {
		t.Errorf("the largest hello is %d bytes, over MaxHelloFrame (%d)", n, MaxHelloFrame)
	}
}

func TestParseHelloRejects(t *testing.T) {
	good := AppendHello(nil, Hello{Version: ProtocolVersion, Topology: "t", Worker: "w", Types: 1, Assignment: "a1"})
	tests := []struct {
		name string
		p    []byte
		want string
	}{
		{"empty", nil, "did not start with a Gale hello"},
		{"HTTP", []byte("GET / HTTP/1.1\r\n"), "did not start with a Gale hello"},
		{"no version", []byte("GALE"), "truncated before the version"},
		{"truncated topology", good[:6], "bad topology id"},
		{"truncated fingerprint", good[:len(good)-4], "type fingerprint"},
		{"truncated assignment", good[:len(good)-1], "bad assignment id"},
		{"trailing bytes", append(append([]byte(nil), good...), 0), "1 bytes after the assignment id"},
		{"topology id too long", AppendHello(nil, Hello{Version: ProtocolVersion, Topology: strings.Repeat("t", maxHelloString+1)}), "bad topology id"},
		{"assignment id too long", AppendHello(nil, Hello{Version: ProtocolVersion, Assignment: strings.Repeat("a", maxHelloString+1)}), "bad assignment id"},
		{"length past the end", append([]byte("GALE\x02"), 0xff, 0xff, 0x03), "bad topology id"},
		{"other version", AppendHello(nil, Hello{Version: ProtocolVersion + 1, Topology: "t"}), "a hello of protocol version 3 met a worker of version 2: run the same Gale version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseHello(tt.p)
			if !errors.Is(err, ErrBadHello) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseHello: %v, want ErrBadHello saying %q", err, tt.want)
			}
		})
	}
}

func TestHelloAccept(t *testing.T) {
	self := Hello{Version: ProtocolVersion, Topology: "wc-1", Worker: "a:6700", Types: 7, Assignment: "as-1"}
	peer := func(f func(h *Hello)) Hello {
		h := Hello{Version: ProtocolVersion, Topology: "wc-1", Worker: "b:6701", Types: 7, Assignment: "as-1"}
		f(&h)
		return h
	}
	tests := []struct {
		name string
		peer Hello
		want string // "" = accepted
	}{
		{"same topology, types and assignment", peer(func(*Hello) {}), ""},
		{"other version", peer(func(h *Hello) { h.Version++ }), `worker "b:6701" speaks protocol version 3, worker "a:6700" version 2`},
		{"other topology", peer(func(h *Hello) { h.Topology = "wc-2" }), `worker "b:6701" runs topology "wc-2", worker "a:6700" runs "wc-1"`},
		{"other types", peer(func(h *Hello) { h.Types = 8 }), "registered other user types"},
		{"other assignment", peer(func(h *Hello) { h.Assignment = "as-2" }),
			`worker "b:6701" holds assignment "as-2", worker "a:6700" holds "as-1": the two workers hold different assignments; start both with the same one`},
		{"no assignment", peer(func(h *Hello) { h.Assignment = "" }), "different assignments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := self.Accept(tt.peer)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Accept: %v, want accepted", err)
			case tt.want != "" && (!errors.Is(err, ErrBadHello) || !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Accept: %v, want ErrBadHello and ErrMismatch saying %q", err, tt.want)
			}
		})
	}
}

func FuzzParseHello(f *testing.F) {
	f.Add(AppendHello(nil, Hello{Version: ProtocolVersion, Topology: "t", Worker: "w", Types: 1, Assignment: "a"}))
	f.Add([]byte("GALE"))
	f.Fuzz(func(t *testing.T, p []byte) {
		h, err := ParseHello(p)
		if err != nil {
			return
		}
		if got, err := ParseHello(AppendHello(nil, h)); err != nil || got != h {
			t.Fatalf("%+v does not round-trip: %+v, %v", h, got, err)
		}
	})
}

// Empty assignments on both sides match: workers started without one.
func TestHelloAcceptNoAssignment(t *testing.T) {
	a := Hello{Version: ProtocolVersion, Topology: "wc-1", Worker: "0"}
	b := Hello{Version: ProtocolVersion, Topology: "wc-1", Worker: "1"}
	if err := a.Accept(b); err != nil {
		t.Errorf("Accept with no assignment on either side: %v", err)
	}
}

// A refusal's reason reaches the dialer as text it can log: valid UTF-8,
// no control characters, bounded.
func TestRefusalRoundTrip(t *testing.T) {
	tests := []struct {
		name      string
		permanent bool
		reason    string
		want      string
	}{
		{"permanent", true, `worker "1" runs topology "a", worker "0" runs "b"`, `worker "1" runs topology "a", worker "0" runs "b"`},
		{"transient", false, "no hello within 10s", "no hello within 10s"},
		{"control characters", true, "bad\x1b[31m\nreason\xff", "bad?[31m?reason?"},
		{"too long", true, strings.Repeat("r", 2*maxRefusalReason), strings.Repeat("r", maxRefusalReason)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := appendRefusal(nil, tt.permanent, tt.reason)
			if len(p)+1 > MaxHelloFrame {
				t.Fatalf("refusal of %d bytes is over MaxHelloFrame", len(p)+1)
			}
			re := parseRefusal("10.0.0.1:6700", p)
			if re.Reason != tt.want || re.Permanent != tt.permanent || !re.ByPeer {
				t.Errorf("got %+v, want reason %q, permanent %v", re, tt.want, tt.permanent)
			}
			if errors.Is(re, ErrMismatch) != tt.permanent || !errors.Is(re, ErrBadHello) {
				t.Errorf("%v: errors.Is ErrMismatch = %v, want %v", re, errors.Is(re, ErrMismatch), tt.permanent)
			}
		})
	}
}
