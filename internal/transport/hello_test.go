package transport

import (
	"errors"
	"strings"
	"testing"
)

func TestHelloRoundTrip(t *testing.T) {
	for _, h := range []Hello{
		{Version: ProtocolVersion, Topology: "wordcount-3-1732950000", Worker: "10.0.0.7:6701", Types: 0x0123456789abcdef},
		{Version: ProtocolVersion},
		{Version: 255, Topology: strings.Repeat("t", maxHelloString), Worker: "ü"},
	} {
		got, err := ParseHello(AppendHello(nil, h))
		if err != nil || got != h {
			t.Errorf("ParseHello(AppendHello(%+v)) = %+v, %v", h, got, err)
		}
	}
}

func TestParseHelloRejects(t *testing.T) {
	good := AppendHello(nil, Hello{Version: ProtocolVersion, Topology: "t", Worker: "w", Types: 1})
	tests := []struct {
		name string
		p    []byte
		want string
	}{
		{"empty", nil, "did not start with a Gale hello"},
		{"HTTP", []byte("GET / HTTP/1.1\r\n"), "did not start with a Gale hello"},
		{"no version", []byte("GALE"), "truncated before the version"},
		{"truncated topology", good[:6], "bad topology id"},
		{"truncated fingerprint", good[:len(good)-1], "type fingerprint"},
		{"trailing bytes", append(append([]byte(nil), good...), 0), "type fingerprint"},
		{"topology id too long", AppendHello(nil, Hello{Topology: strings.Repeat("t", maxHelloString+1)}), "bad topology id"},
		{"length past the end", append([]byte("GALE\x01"), 0xff, 0xff, 0x03), "bad topology id"},
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
	self := Hello{Version: ProtocolVersion, Topology: "wc-1", Worker: "a:6700", Types: 7}
	tests := []struct {
		name string
		peer Hello
		want string // "" = accepted
	}{
		{"same topology and types", Hello{Version: ProtocolVersion, Topology: "wc-1", Worker: "b:6701", Types: 7}, ""},
		{"other version", Hello{Version: ProtocolVersion + 1, Topology: "wc-1", Worker: "b:6701", Types: 7}, "protocol version 2"},
		{"other topology", Hello{Version: ProtocolVersion, Topology: "wc-2", Worker: "b:6701", Types: 7}, `runs topology "wc-2"`},
		{"other types", Hello{Version: ProtocolVersion, Topology: "wc-1", Worker: "b:6701", Types: 8}, "registered other user types"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := self.Accept(tt.peer)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Accept: %v, want accepted", err)
			case tt.want != "" && (!errors.Is(err, ErrBadHello) || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Accept: %v, want ErrBadHello saying %q", err, tt.want)
			}
		})
	}
}

func FuzzParseHello(f *testing.F) {
	f.Add(AppendHello(nil, Hello{Version: ProtocolVersion, Topology: "t", Worker: "w", Types: 1}))
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
