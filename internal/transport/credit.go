package transport

import (
	"encoding/binary"
	"fmt"
)

// Credit grants a sender room for N more batches to one destination
// executor (see docs/architecture.md, backpressure between workers). The
// listener sends credits to the dialer in backpressure frames: a uvarint
// count, then per credit the executor's index and N as uvarints.
type Credit struct {
	Dest int32 // the destination executor's index in the topology
	N    uint32
}

// AppendCredits appends the payload of a backpressure frame to dst.
func AppendCredits(dst []byte, cs []Credit) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(cs)))
	for _, c := range cs {
		dst = binary.AppendUvarint(dst, uint64(c.Dest))
		dst = binary.AppendUvarint(dst, uint64(c.N))
	}
	return dst
}

// ParseCredits decodes a backpressure frame's payload, appending to dst.
// Destinations must be below numDests, the topology's executor count, and
// each grant must be positive.
func ParseCredits(p []byte, numDests int, dst []Credit) ([]Credit, error) {
	off := 0
	uv := func() (uint64, bool) {
		v, k := binary.Uvarint(p[off:])
		if k <= 0 {
			return 0, false
		}
		off += k
		return v, true
	}
	bad := func(format string, args ...any) ([]Credit, error) {
		return dst, fmt.Errorf("transport: %w: backpressure frame at byte %d: %s", ErrMalformedFrame, off, fmt.Sprintf(format, args...))
	}
	n, ok := uv()
	if !ok || n > uint64(len(p)-off)/2 { // each credit takes at least 2 bytes
		return bad("bad count")
	}
	for range n {
		dest, ok1 := uv()
		grant, ok2 := uv()
		switch {
		case !ok1 || !ok2:
			return bad("truncated")
		case dest >= uint64(numDests):
			return bad("destination %d: the topology has %d executors", dest, numDests)
		case grant == 0 || grant > 1<<20:
			return bad("grant of %d batches for destination %d", grant, dest)
		}
		dst = append(dst, Credit{Dest: int32(dest), N: uint32(grant)})
	}
	if off != len(p) {
		return bad("%d bytes after the credits", len(p)-off)
	}
	return dst, nil
}
