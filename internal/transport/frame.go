// Package transport carries tuples between worker processes over TCP.
//
// This file is the framing: every message on a connection is a frame,
//
//	length  uint32, big endian: the bytes that follow (kind and payload)
//	kind    uint8: FrameHello, FrameData, FrameHeartbeat, FrameBackpressure, FrameClose, FrameRefuse, FrameProof
//	payload length-1 bytes
//
// A reader enforces a maximum frame size and rejects empty frames and
// unknown kinds, so a peer that sends garbage gets its connection closed
// with an error that says what was wrong, and never makes the worker
// allocate more than the frame size allows or more than has arrived.
package transport

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync/atomic"
)

// FrameKind says what a frame carries.
type FrameKind uint8

// The frame kinds.
const (
	FrameHello        FrameKind = iota + 1 // first frame of a connection: who is speaking
	FrameData                              // a batch of addressed tuples
	FrameHeartbeat                         // liveness, when there is nothing else to send
	FrameBackpressure                      // credits, listener to dialer: see Credit
	FrameClose                             // orderly close: nothing follows
	FrameRefuse                            // listener to dialer, in place of its hello: why it refused the dialer's
	FrameProof                             // with a topology secret: the dialer's proof, then the listener's acceptance
	frameKindEnd
)

func (k FrameKind) String() string {
	switch k {
	case FrameHello:
		return "hello"
	case FrameData:
		return "data"
	case FrameHeartbeat:
		return "heartbeat"
	case FrameBackpressure:
		return "backpressure"
	case FrameClose:
		return "close"
	case FrameRefuse:
		return "refuse"
	case FrameProof:
		return "proof"
	}
	return fmt.Sprintf("FrameKind(%d)", uint8(k))
}

// frameHeader is the length field and the kind byte.
const frameHeader = 5

// DefaultMaxFrameSize bounds a frame's kind and payload unless a reader is
// given another bound.
const DefaultMaxFrameSize = 16 << 20

// ErrMalformedFrame is wrapped by every error about a frame's bytes: an
// empty frame, an unknown kind, or a frame over the size bound.
var ErrMalformedFrame = errors.New("malformed frame")

// FrameError describes a frame a reader rejected.
type FrameError struct {
	Offset int64 // where on the connection the frame started
	Reason string
}

func (e *FrameError) Error() string {
	return fmt.Sprintf("transport: %v at byte %d of the connection: %s", ErrMalformedFrame, e.Offset, e.Reason)
}

func (e *FrameError) Unwrap() error { return ErrMalformedFrame }

// FrameReader reads frames from a connection. It belongs to one goroutine.
type FrameReader struct {
	r   *bufio.Reader
	max int
	buf []byte
	off int64 // bytes consumed so far
}

// NewFrameReader reads frames of at most maxSize bytes (kind and payload)
// from r; maxSize ≤ 0 means DefaultMaxFrameSize.
func NewFrameReader(r io.Reader, maxSize int) *FrameReader {
	if maxSize <= 0 {
		maxSize = DefaultMaxFrameSize
	}
	return &FrameReader{r: bufio.NewReaderSize(r, 64<<10), max: maxSize}
}

// growStep bounds how far the payload buffer grows ahead of the bytes that
// have arrived, so a hostile length costs memory only as data comes.
const growStep = 64 << 10

// Read returns the next frame's kind and payload. The payload is valid
// until the next call. At a clean end of the stream between frames it
// returns io.EOF; a stream that ends inside a frame gives
// io.ErrUnexpectedEOF; a frame that breaks the rules gives a *FrameError,
// after which the connection should be closed.
func (fr *FrameReader) Read() (FrameKind, []byte, error) {
	start := fr.off
	var hdr [frameHeader]byte
	n, err := io.ReadFull(fr.r, hdr[:4])
	fr.off += int64(n)
	if err != nil {
		return 0, nil, err // io.EOF only if nothing was read
	}
	size := binary.BigEndian.Uint32(hdr[:4])
	switch {
	case size == 0:
		return 0, nil, &FrameError{start, "empty frame (length 0, no kind byte)"}
	case uint64(size) > uint64(fr.max):
		return 0, nil, &FrameError{start, fmt.Sprintf("frame of %d bytes is over the %d-byte bound", size, fr.max)}
	}
	b, err := fr.r.ReadByte()
	if err != nil {
		return 0, nil, unexpected(err)
	}
	fr.off++
	kind := FrameKind(b)
	if kind == 0 || kind >= frameKindEnd {
		return 0, nil, &FrameError{start, fmt.Sprintf("unknown frame kind %d", b)}
	}
	payload := int(size) - 1
	fr.buf = fr.buf[:0]
	for len(fr.buf) < payload {
		want := min(payload, len(fr.buf)+growStep)
		fr.buf = slices.Grow(fr.buf, want-len(fr.buf))
		n, err := io.ReadFull(fr.r, fr.buf[len(fr.buf):want])
		fr.buf = fr.buf[:len(fr.buf)+n]
		fr.off += int64(n)
		if err != nil {
			return 0, nil, unexpected(err)
		}
	}
	return kind, fr.buf, nil
}

// readFirstFrame reads a connection's first frame, a hello or a refusal,
// of at most MaxHelloFrame bytes. It reads no byte past the frame, so the
// FrameReader that takes the connection on after the handshake starts at
// the next one, and allocates the payload only once the header has said
// how long it is; held, if set, counts the bytes it holds meanwhile.
func readFirstFrame(r io.Reader, held *atomic.Int64) (FrameKind, []byte, error) {
	var hdr [frameHeader]byte
	if n, err := io.ReadFull(r, hdr[:]); err != nil {
		if n > 0 {
			err = unexpected(err)
		}
		return 0, nil, err
	}
	size := binary.BigEndian.Uint32(hdr[:4])
	switch kind := FrameKind(hdr[4]); {
	case size == 0:
		return 0, nil, &FrameError{0, "empty frame (length 0, no kind byte)"}
	case size > MaxHelloFrame:
		return 0, nil, &FrameError{0, fmt.Sprintf("first frame of %d bytes is over the %d-byte bound of a hello", size, MaxHelloFrame)}
	case kind == 0 || kind >= frameKindEnd:
		return 0, nil, &FrameError{0, fmt.Sprintf("unknown frame kind %d", hdr[4])}
	default:
		payload := make([]byte, size-1)
		if held != nil {
			held.Add(int64(len(payload)))
			defer held.Add(-int64(len(payload)))
		}
		if _, err := io.ReadFull(r, payload); err != nil {
			return 0, nil, unexpected(err)
		}
		return kind, payload, nil
	}
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// FrameWriter writes frames to a connection, buffered: nothing is sent
// until Flush or until the buffer fills. It belongs to one goroutine.
type FrameWriter struct {
	w   *bufio.Writer
	max int
}

// NewFrameWriter writes frames of at most maxSize bytes (kind and
// payload) to w; maxSize ≤ 0 means DefaultMaxFrameSize.
func NewFrameWriter(w io.Writer, maxSize int) *FrameWriter {
	if maxSize <= 0 {
		maxSize = DefaultMaxFrameSize
	}
	return &FrameWriter{w: bufio.NewWriterSize(w, 64<<10), max: maxSize}
}

// Write buffers one frame. A payload over the bound, or an unknown kind,
// is an error wrapping ErrMalformedFrame and writes nothing: the peer
// would reject it. Any other error is the connection's.
func (fw *FrameWriter) Write(kind FrameKind, payload []byte) error {
	if kind == 0 || kind >= frameKindEnd {
		return fmt.Errorf("transport: %w: cannot write a frame of unknown kind %d", ErrMalformedFrame, uint8(kind))
	}
	if len(payload)+1 > fw.max {
		return fmt.Errorf("transport: %w: a %s frame of %d bytes is over the %d-byte bound (the batch is too large: lower topology.producer.batch.size)", ErrMalformedFrame, kind, len(payload)+1, fw.max)
	}
	var hdr [frameHeader]byte
	binary.BigEndian.PutUint32(hdr[:4], uint32(len(payload)+1))
	hdr[4] = byte(kind)
	if _, err := fw.w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := fw.w.Write(payload)
	return err
}

// Flush sends what is buffered.
func (fw *FrameWriter) Flush() error { return fw.w.Flush() }

// Buffered is the number of bytes written but not yet sent.
func (fw *FrameWriter) Buffered() int { return fw.w.Buffered() }
