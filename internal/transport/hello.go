package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// ProtocolVersion is the version of the worker-to-worker protocol this
// build speaks. A peer with another version is refused at the hello.
const ProtocolVersion = 1

// helloMagic opens every hello payload, so that a connection from
// something that is not a Gale worker is told apart from a Gale worker of
// another version.
var helloMagic = []byte("GALE")

// Hello is the payload of a connection's first frame: who is speaking,
// for which topology, with which registered types.
type Hello struct {
	Version  uint8
	Topology string // the topology id both workers run
	Worker   string // the sender's worker id
	// Types fingerprints the user types registered with the topology, in
	// order: workers that disagree would decode each other's values as
	// the wrong types, so they are refused at the hello instead.
	Types uint64
}

// maxHelloString bounds the topology and worker ids in a hello.
const maxHelloString = 1024

// AppendHello appends h's encoding to dst.
func AppendHello(dst []byte, h Hello) []byte {
	dst = append(dst, helloMagic...)
	dst = append(dst, h.Version)
	dst = binary.AppendUvarint(dst, uint64(len(h.Topology)))
	dst = append(dst, h.Topology...)
	dst = binary.AppendUvarint(dst, uint64(len(h.Worker)))
	dst = append(dst, h.Worker...)
	return binary.BigEndian.AppendUint64(dst, h.Types)
}

// ErrBadHello is wrapped by every error about a hello that cannot be
// parsed or is refused.
var ErrBadHello = errors.New("bad hello")

// ParseHello decodes a hello payload.
func ParseHello(p []byte) (Hello, error) {
	bad := func(format string, args ...any) (Hello, error) {
		return Hello{}, fmt.Errorf("transport: %w: %s", ErrBadHello, fmt.Sprintf(format, args...))
	}
	if !bytes.HasPrefix(p, helloMagic) {
		return bad("the connection did not start with a Gale hello: is a Gale worker of this topology on the other side?")
	}
	p = p[len(helloMagic):]
	if len(p) < 1 {
		return bad("truncated before the version")
	}
	h := Hello{Version: p[0]}
	p = p[1:]
	str := func() (string, bool) {
		n, k := binary.Uvarint(p)
		if k <= 0 || n > maxHelloString || n > uint64(len(p)-k) {
			return "", false
		}
		s := string(p[k : k+int(n)])
		p = p[k+int(n):]
		return s, true
	}
	var ok bool
	if h.Topology, ok = str(); !ok {
		return bad("bad topology id")
	}
	if h.Worker, ok = str(); !ok {
		return bad("bad worker id")
	}
	if len(p) != 8 {
		return bad("%d bytes where the 8-byte type fingerprint should end it", len(p))
	}
	h.Types = binary.BigEndian.Uint64(p)
	return h, nil
}

// Accept checks a peer's hello against this worker's own: same protocol
// version, same topology, same registered types.
func (h Hello) Accept(peer Hello) error {
	switch {
	case peer.Version != h.Version:
		return fmt.Errorf("transport: %w: worker %q speaks protocol version %d, this worker %d: run the same Gale version on every worker",
			ErrBadHello, peer.Worker, peer.Version, h.Version)
	case peer.Topology != h.Topology:
		return fmt.Errorf("transport: %w: worker %q runs topology %q, this worker %q: a stale worker, or a port reused across topologies",
			ErrBadHello, peer.Worker, peer.Topology, h.Topology)
	case peer.Types != h.Types:
		return fmt.Errorf("transport: %w: worker %q registered other user types (fingerprint %016x, here %016x): build every worker from the same topology binary",
			ErrBadHello, peer.Worker, peer.Types, h.Types)
	}
	return nil
}
