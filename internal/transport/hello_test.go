package transport

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestHelloRoundTrip(t *testing.T) {
	for _, h := range []Hello{
		{Version: ProtocolVersion, Topology: "wordcount-3-1732950000", Worker: "10.0.0.7:6701", Types: 0x0123456789abcdef, Assignment: "5f3a9c"},
		{Version: ProtocolVersion},
		{Version: ProtocolVersion, Topology: strings.Repeat("t", maxHelloString), Worker: "ü", Assignment: strings.Repeat("a", maxHelloString)},
		{Version: ProtocolVersion, Topology: "t", Worker: "1", Assignment: "a", Nonce: "\x00\x01nonce", Proof: strings.Repeat("\xff", 32)},
		{Version: ProtocolVersion, Topology: "t", Assignment: "a", AssignmentVersion: 1 << 40},
		{Version: ProtocolVersion, Topology: "t", Assignment: "a", AssignmentVersion: -1},
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
	auth := strings.Repeat("x", maxHelloAuth)
	if n := len(AppendHello(nil, Hello{Version: ProtocolVersion, Topology: big, Worker: big, Assignment: big, AssignmentVersion: -1 << 63, Nonce: auth, Proof: auth})) + 1; n > MaxHelloFrame {
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
		{"truncated fingerprint", good[:len(good)-7], "type fingerprint"},
		{"truncated assignment", good[:len(good)-4], "bad assignment id"},
		{"truncated assignment version", good[:len(good)-3], "bad assignment version"},
		{"truncated nonce", good[:len(good)-2], "bad nonce"},
		{"truncated proof", good[:len(good)-1], "bad proof"},
		{"trailing bytes", append(append([]byte(nil), good...), 0), "1 bytes after the proof"},
		{"nonce too long", AppendHello(nil, Hello{Version: ProtocolVersion, Nonce: strings.Repeat("n", maxHelloAuth+1)}), "bad nonce"},
		{"proof too long", AppendHello(nil, Hello{Version: ProtocolVersion, Proof: strings.Repeat("p", maxHelloAuth+1)}), "bad proof"},
		{"topology id too long", AppendHello(nil, Hello{Version: ProtocolVersion, Topology: strings.Repeat("t", maxHelloString+1)}), "bad topology id"},
		{"assignment id too long", AppendHello(nil, Hello{Version: ProtocolVersion, Assignment: strings.Repeat("a", maxHelloString+1)}), "bad assignment id"},
		{"length past the end", append([]byte{'G', 'A', 'L', 'E', ProtocolVersion}, 0xff, 0xff, 0x03), "bad topology id"},
		{"other version", AppendHello(nil, Hello{Version: ProtocolVersion + 1, Topology: "t"}),
			fmt.Sprintf("a hello of protocol version %d met a worker of version %d: run the same Gale version", ProtocolVersion+1, ProtocolVersion)},
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
		{"other version", peer(func(h *Hello) { h.Version++ }),
			fmt.Sprintf(`worker "b:6701" speaks protocol version %d, worker "a:6700" version %d`, ProtocolVersion+1, ProtocolVersion)},
		{"other topology", peer(func(h *Hello) { h.Topology = "wc-2" }), `worker "b:6701" runs topology "wc-2", worker "a:6700" runs "wc-1"`},
		{"other types", peer(func(h *Hello) { h.Types = 8 }), "registered other user types"},
		{"other assignment", peer(func(h *Hello) { h.Assignment = "as-2" }),
			`worker "b:6701" holds assignment "as-2", worker "a:6700" holds "as-1": the two workers hold different assignments; start both with the same one`},
		{"no assignment", peer(func(h *Hello) { h.Assignment = "" }), "different assignments"},
		{"an older assignment", peer(func(h *Hello) { h.Assignment, h.AssignmentVersion = "as-0", -1 }), "the two workers hold different assignments"},
		{"a secret where this worker holds none", peer(func(h *Hello) { h.Nonce = "n" }),
			`worker "b:6701" proves a topology secret, and worker "a:6700" holds none: the two workers hold different assignments`},
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

// TestHelloAcceptNewerAssignment: a peer whose assignment is newer than
// this worker's is refused, but not as a mismatch: it retries until this
// worker has been reassigned. The same assignment at another version is
// accepted.
func TestHelloAcceptNewerAssignment(t *testing.T) {
	self := Hello{Version: ProtocolVersion, Topology: "wc-1", Worker: "0", Assignment: "as-1", AssignmentVersion: 7}
	peer := Hello{Version: ProtocolVersion, Topology: "wc-1", Worker: "2", Assignment: "as-2", AssignmentVersion: 8}
	err := self.Accept(peer)
	const want = `worker "2" holds assignment "as-2" of version 8, newer than worker "0"'s "as-1" of version 7: retry once worker "0" has been reassigned`
	if !errors.Is(err, ErrBadHello) || errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), want) {
		t.Errorf("Accept: %v, want ErrBadHello, not ErrMismatch, saying %q", err, want)
	}
	if err := peer.Accept(self); !errors.Is(err, ErrMismatch) {
		t.Errorf("the newer worker's Accept of the older: %v, want ErrMismatch", err)
	}
	peer.Assignment = self.Assignment
	if err := self.Accept(peer); err != nil {
		t.Errorf("the same assignment at another version: %v, want accepted", err)
	}
}

// TestHelloAcceptSecret: a worker that holds the topology's secret (its
// hello has a nonce) refuses a hello without one, as a mismatch; the
// proofs are checked in the handshake.
func TestHelloAcceptSecret(t *testing.T) {
	self := Hello{Version: ProtocolVersion, Topology: "wc-1", Worker: "0", Assignment: "as-1", Nonce: "n0"}
	peer := Hello{Version: ProtocolVersion, Topology: "wc-1", Worker: "1", Assignment: "as-1", Nonce: "n1"}
	if err := self.Accept(peer); err != nil {
		t.Errorf("Accept with nonces on both: %v", err)
	}
	peer.Nonce = ""
	err := self.Accept(peer)
	const want = `worker "1" does not prove the topology's secret: is it a worker of another topology or an old assignment?`
	if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), want) {
		t.Errorf("Accept without a nonce: %v, want ErrMismatch saying %q", err, want)
	}
}

// TestProofs: a proof checks only with the same secret, role, hello and
// challenge.
func TestProofs(t *testing.T) {
	secret := []byte("s3cret")
	h := Hello{Version: ProtocolVersion, Topology: "wc-1", Worker: "1", Types: 9, Assignment: "as-1", Nonce: "n1"}
	p := prove(secret, roleDialer, h, "n0")
	if err := checkProof(secret, roleDialer, h, "n0", p); err != nil {
		t.Fatalf("the right proof: %v", err)
	}
	other := func(f func(h *Hello)) Hello { g := h; f(&g); return g }
	for _, tc := range []struct {
		name      string
		secret    []byte
		role      string
		h         Hello
		challenge string
	}{
		{"other secret", []byte("s3cre7"), roleDialer, h, "n0"},
		{"other role", secret, roleListener, h, "n0"},
		{"other challenge", secret, roleDialer, h, "n9"},
		{"other topology", secret, roleDialer, other(func(h *Hello) { h.Topology = "wc-2" }), "n0"},
		{"other worker", secret, roleDialer, other(func(h *Hello) { h.Worker = "2" }), "n0"},
		{"other types", secret, roleDialer, other(func(h *Hello) { h.Types = 8 }), "n0"},
		{"other assignment", secret, roleDialer, other(func(h *Hello) { h.Assignment = "as-2" }), "n0"},
		{"other nonce", secret, roleDialer, other(func(h *Hello) { h.Nonce = "n2" }), "n0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkProof(tc.secret, tc.role, tc.h, tc.challenge, p)
			if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "does not prove the topology's secret") {
				t.Errorf("checkProof: %v, want a mismatch", err)
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
