package transport

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ProtocolVersion is the version of the worker-to-worker protocol this
// build speaks. A peer with another version is refused at the hello.
const ProtocolVersion = 6

// helloMagic opens every hello payload, so that a connection from
// something that is not a Gale worker is told apart from a Gale worker of
// another version.
var helloMagic = []byte("GALE")

// Hello is the payload of a connection's first frame: who is speaking,
// for which topology, with which registered types and assignment.
type Hello struct {
	Version  uint8
	Topology string // the topology id both workers run
	Worker   string // the sender's worker id
	// Types fingerprints the user types registered with the topology, in
	// order: workers that disagree would decode each other's values as
	// the wrong types, so they are refused at the hello instead.
	Types uint64
	// Assignment fingerprints the assignment the worker was started with
	// (which worker runs which executor): workers that disagree would
	// send each other tuples for executors the other does not run. Empty
	// matches only empty.
	Assignment string
	// AssignmentVersion orders assignments (nimbus bumps it with every
	// change): a worker whose assignment is older than its peer's refuses
	// that peer only until it is reassigned, the peer retrying, while a
	// peer with an older one is refused for good. Equal versions (0 when
	// unordered) with different assignments refuse each other for good.
	AssignmentVersion int64
	// Nonce is the challenge the other side's proof must answer: random
	// bytes the worker makes for each handshake when it holds the
	// topology's secret (ServerConfig.Secret, SenderConfig.Secret),
	// empty when it holds none. A worker with a secret refuses a hello
	// without a nonce, and one without refuses a hello with one.
	Nonce string
	// Proof is set in a listener's hello when it holds the secret: the
	// HMAC-SHA256, keyed by the secret, of the hello's other fields and
	// the dialer's nonce (see the handshake in conn.go). The dialer proves
	// the secret in a proof frame that answers the listener's nonce.
	Proof string
}

// maxHelloString bounds the topology, worker and assignment ids in a hello.
const maxHelloString = 1024

// maxHelloAuth bounds a hello's nonce and proof; nonceLen is the nonce a
// worker makes, and a proof is an HMAC-SHA256.
const (
	maxHelloAuth = 64
	nonceLen     = 16
)

// MaxHelloFrame bounds the first frame each side of a connection reads (a
// hello, a proof or a refusal, kind byte included): the largest hello,
// three ids of maxHelloString bytes with their lengths, the magic, the
// version, the type fingerprint, the assignment version and a nonce and a
// proof of maxHelloAuth bytes with theirs. Until the handshake has
// succeeded a peer can make a worker hold no more than this per
// connection.
const MaxHelloFrame = 1 + 4 + 1 + 3*(binary.MaxVarintLen16+maxHelloString) + 8 + binary.MaxVarintLen64 + 2*(binary.MaxVarintLen16+maxHelloAuth)

// AppendHello appends h's encoding to dst.
func AppendHello(dst []byte, h Hello) []byte {
	dst = append(dst, helloMagic...)
	dst = append(dst, h.Version)
	dst = binary.AppendUvarint(dst, uint64(len(h.Topology)))
	dst = append(dst, h.Topology...)
	dst = binary.AppendUvarint(dst, uint64(len(h.Worker)))
	dst = append(dst, h.Worker...)
	dst = binary.BigEndian.AppendUint64(dst, h.Types)
	dst = binary.AppendUvarint(dst, uint64(len(h.Assignment)))
	dst = append(dst, h.Assignment...)
	dst = binary.AppendVarint(dst, h.AssignmentVersion)
	dst = binary.AppendUvarint(dst, uint64(len(h.Nonce)))
	dst = append(dst, h.Nonce...)
	dst = binary.AppendUvarint(dst, uint64(len(h.Proof)))
	return append(dst, h.Proof...)
}

// ErrBadHello is wrapped by every error about a hello that cannot be
// parsed or is refused.
var ErrBadHello = errors.New("bad hello")

// ErrMismatch is wrapped, with ErrBadHello, by the error for a hello from
// a Gale worker that cannot work with this one: another protocol version,
// topology, set of registered types or assignment. Retrying cannot help:
// one of the two workers must be started again, the same as the other.
var ErrMismatch = errors.New("the workers do not match")

// helloError is a hello that does not parse or is refused.
type helloError struct {
	reason   string
	mismatch bool // a Gale worker that cannot work with this one
	// behind: this worker's assignment is older than the peer's, which
	// may retry until this worker is reassigned.
	behind bool
}

func (e *helloError) Error() string {
	if e.mismatch {
		return fmt.Sprintf("transport: %v: %v: %s", ErrBadHello, ErrMismatch, e.reason)
	}
	return fmt.Sprintf("transport: %v: %s", ErrBadHello, e.reason)
}

// Unwrap gives ErrBadHello, and ErrMismatch for a mismatch.
func (e *helloError) Unwrap() []error {
	if e.mismatch {
		return []error{ErrBadHello, ErrMismatch}
	}
	return []error{ErrBadHello}
}

// ParseHello decodes a hello payload. A hello of another protocol
// version is an error wrapping ErrMismatch: its layout is that version's.
func ParseHello(p []byte) (Hello, error) {
	bad := func(format string, args ...any) (Hello, error) {
		return Hello{}, &helloError{reason: fmt.Sprintf(format, args...)}
	}
	if !bytes.HasPrefix(p, helloMagic) {
		return bad("the connection did not start with a Gale hello: is a Gale worker of this topology on the other side?")
	}
	p = p[len(helloMagic):]
	if len(p) < 1 {
		return bad("truncated before the version")
	}
	h := Hello{Version: p[0]}
	if h.Version != ProtocolVersion {
		return Hello{}, &helloError{mismatch: true, reason: fmt.Sprintf(
			"a hello of protocol version %d met a worker of version %d: run the same Gale version on every worker", h.Version, ProtocolVersion)}
	}
	p = p[1:]
	str := func(max uint64) (string, bool) {
		n, k := binary.Uvarint(p)
		if k <= 0 || n > max || n > uint64(len(p)-k) {
			return "", false
		}
		s := string(p[k : k+int(n)])
		p = p[k+int(n):]
		return s, true
	}
	var ok bool
	if h.Topology, ok = str(maxHelloString); !ok {
		return bad("bad topology id")
	}
	if h.Worker, ok = str(maxHelloString); !ok {
		return bad("bad worker id")
	}
	if len(p) < 8 {
		return bad("truncated in the type fingerprint")
	}
	h.Types = binary.BigEndian.Uint64(p)
	p = p[8:]
	if h.Assignment, ok = str(maxHelloString); !ok {
		return bad("bad assignment id")
	}
	v, k := binary.Varint(p)
	if k <= 0 {
		return bad("bad assignment version")
	}
	h.AssignmentVersion, p = v, p[k:]
	if h.Nonce, ok = str(maxHelloAuth); !ok {
		return bad("bad nonce")
	}
	if h.Proof, ok = str(maxHelloAuth); !ok {
		return bad("bad proof")
	}
	if len(p) != 0 {
		return bad("%d bytes after the proof", len(p))
	}
	return h, nil
}

// Accept checks a peer's hello against this worker's own: same protocol
// version, topology, registered types and assignment (a peer with a newer
// assignment is refused until this worker is reassigned: the error is no
// mismatch then, and the peer retries), and a nonce on both
// or neither (both hold the topology's secret, or neither does; whether
// they hold the same one the proofs show). A refusal wraps ErrBadHello and
// ErrMismatch, and reads the same in either worker's log.
func (h Hello) Accept(peer Hello) error {
	mismatch := func(format string, args ...any) error {
		return &helloError{mismatch: true, reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case peer.Version != h.Version:
		return mismatch("worker %q speaks protocol version %d, worker %q version %d: run the same Gale version on every worker",
			peer.Worker, peer.Version, h.Worker, h.Version)
	case peer.Topology != h.Topology:
		return mismatch("worker %q runs topology %q, worker %q runs %q: a stale worker, or a port reused across topologies",
			peer.Worker, peer.Topology, h.Worker, h.Topology)
	case peer.Types != h.Types:
		return mismatch("worker %q registered other user types than worker %q (fingerprints %016x and %016x): build every worker from the same topology binary",
			peer.Worker, h.Worker, peer.Types, h.Types)
	case peer.Assignment != h.Assignment && peer.AssignmentVersion > h.AssignmentVersion:
		return &helloError{behind: true, reason: fmt.Sprintf(
			"worker %q holds assignment %q of version %d, newer than worker %q's %q of version %d: retry once worker %q has been reassigned",
			peer.Worker, peer.Assignment, peer.AssignmentVersion, h.Worker, h.Assignment, h.AssignmentVersion, h.Worker)}
	case peer.Assignment != h.Assignment:
		return mismatch("worker %q holds assignment %q, worker %q holds %q: the two workers hold different assignments; start both with the same one",
			peer.Worker, peer.Assignment, h.Worker, h.Assignment)
	case h.Nonce != "" && peer.Nonce == "":
		return mismatch("worker %q %s (it sent no proof: it holds no secret)", peer.Worker, noProof)
	case h.Nonce == "" && peer.Nonce != "":
		return mismatch("worker %q proves a topology secret, and worker %q holds none: the two workers hold different assignments; start both with the same one",
			peer.Worker, h.Worker)
	}
	return nil
}

// noProof is what a refusal says of a peer that does not prove the
// topology's secret.
const noProof = "does not prove the topology's secret: is it a worker of another topology or an old assignment?"

// The roles a proof is made for, so that one side's proof is never the
// other's.
const (
	roleListener = "gale listener hello\x00"
	roleDialer   = "gale dialer hello\x00"
)

// prove returns the proof that a worker holding secret sends for its
// hello h in role, answering the other side's nonce challenge: the
// HMAC-SHA256, keyed by secret, of the role, h's encoding without its
// proof (every other field, its own nonce included) and the challenge.
func prove(secret []byte, role string, h Hello, challenge string) string {
	h.Proof = ""
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(role))
	m.Write(AppendHello(nil, h))
	m.Write([]byte(challenge))
	return string(m.Sum(nil))
}

// checkProof checks the proof a peer sent for its hello h in role against
// this worker's challenge. A wrong proof is a mismatch: retrying cannot
// help.
func checkProof(secret []byte, role string, h Hello, challenge, proof string) error {
	if !hmac.Equal([]byte(proof), []byte(prove(secret, role, h, challenge))) {
		return &helloError{mismatch: true, reason: fmt.Sprintf("worker %q %s (its proof is wrong: it holds another secret)", h.Worker, noProof)}
	}
	return nil
}

// newNonce makes a handshake's challenge.
func newNonce() string {
	b := make([]byte, nonceLen)
	rand.Read(b) // never fails (crypto/rand)
	return string(b)
}

// A refusal is the listener's answer to a hello it does not accept, in
// place of its own hello, after which it closes the connection: a flags
// byte (refusePermanent: retrying cannot help) and the reason, UTF-8.
const refusePermanent = 1

// maxRefusalReason bounds the reason a refusal carries.
const maxRefusalReason = MaxHelloFrame - 2

// appendRefusal appends a refusal's payload to dst.
func appendRefusal(dst []byte, permanent bool, reason string) []byte {
	var flags byte
	if permanent {
		flags |= refusePermanent
	}
	if len(reason) > maxRefusalReason {
		reason = strings.ToValidUTF8(reason[:maxRefusalReason], "")
	}
	return append(append(dst, flags), reason...)
}

// RefusedError is a Sender's error for a hello that the listener refused
// with a refusal frame, or that the Sender refused in the listener's
// answer. If Permanent, retrying cannot help, and it wraps ErrMismatch.
type RefusedError struct {
	Addr      string // the listener's
	Reason    string // as the refusing side gave it
	Permanent bool
	// ByPeer is true if the listener refused this worker's hello, false
	// if this worker refused the listener's.
	ByPeer bool
}

func (e *RefusedError) Error() string {
	if e.ByPeer {
		return fmt.Sprintf("transport: the peer worker at %s refused this worker's hello: %s", e.Addr, e.Reason)
	}
	return fmt.Sprintf("transport: refused the hello of the peer worker at %s: %s", e.Addr, e.Reason)
}

// Unwrap gives ErrBadHello, and ErrMismatch for a permanent refusal.
func (e *RefusedError) Unwrap() []error {
	if e.Permanent {
		return []error{ErrBadHello, ErrMismatch}
	}
	return []error{ErrBadHello}
}

// parseRefusal decodes a refusal from the listener at addr. The reason is
// the peer's text: it is made valid UTF-8 and stripped of control
// characters before anyone logs it.
func parseRefusal(addr string, p []byte) *RefusedError {
	if len(p) == 0 {
		return &RefusedError{Addr: addr, Reason: "(no reason given)", ByPeer: true}
	}
	reason := strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || r == utf8.RuneError {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(string(p[1:]), "?"))
	return &RefusedError{Addr: addr, Reason: reason, Permanent: p[0]&refusePermanent != 0, ByPeer: true}
}
