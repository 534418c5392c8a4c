package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

type frame struct {
	kind    FrameKind
	payload []byte
}

func encodeFrames(t testing.TB, max int, frames ...frame) []byte {
	t.Helper()
	var buf bytes.Buffer
	fw := NewFrameWriter(&buf, max)
	for _, f := range frames {
		if err := fw.Write(f.kind, f.payload); err != nil {
			t.Fatalf("Write(%v, %d bytes): %v", f.kind, len(f.payload), err)
		}
	}
	if err := fw.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readAll reads frames until an error, copying payloads.
func readAll(r io.Reader, max int) ([]frame, error) {
	fr := NewFrameReader(r, max)
	var out []frame
	for {
		k, p, err := fr.Read()
		if err != nil {
			return out, err
		}
		out = append(out, frame{k, bytes.Clone(p)})
	}
}

func TestFrameRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 0))
	var frames []frame
	for i := range 500 {
		n := rng.IntN(300)
		if i%50 == 0 {
			n = rng.IntN(200 << 10) // larger than the reader's growth step
		}
		p := make([]byte, n)
		for j := range p {
			p[j] = byte(rng.Uint32())
		}
		frames = append(frames, frame{FrameKind(1 + rng.IntN(int(frameKindEnd)-1)), p})
	}
	data := encodeFrames(t, 0, frames...)
	// A reader that gets the bytes in small, random pieces, as TCP delivers them.
	got, err := readAll(&choppyReader{data: data, rng: rng}, 0)
	if err != io.EOF {
		t.Fatalf("after %d frames: error %v, want io.EOF at the clean end", len(got), err)
	}
	if len(got) != len(frames) {
		t.Fatalf("read %d frames, want %d", len(got), len(frames))
	}
	for i := range frames {
		if got[i].kind != frames[i].kind || !bytes.Equal(got[i].payload, frames[i].payload) {
			t.Fatalf("frame %d: got %v with %d bytes, want %v with %d bytes", i, got[i].kind, len(got[i].payload), frames[i].kind, len(frames[i].payload))
		}
	}
}

type choppyReader struct {
	data []byte
	rng  *rand.Rand
}

func (c *choppyReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.data), 1+c.rng.IntN(3000))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func TestFrameReaderRejects(t *testing.T) {
	good := encodeFrames(t, 0, frame{FrameHeartbeat, nil})
	header := func(size uint32, kind byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, size)
		return append(b, kind)
	}
	tests := []struct {
		name   string
		data   []byte
		max    int
		want   error  // errors.Is target
		offset int64  // of the bad frame, for a *FrameError
		frames int    // good frames read first
		reason string // in the error
	}{
		{name: "empty frame", data: append(bytes.Clone(good), 0, 0, 0, 0), want: ErrMalformedFrame, offset: 5, frames: 1, reason: "empty frame"},
		{name: "unknown kind", data: header(1, 99), want: ErrMalformedFrame, reason: "unknown frame kind 99"},
		{name: "kind zero", data: header(1, 0), want: ErrMalformedFrame, reason: "unknown frame kind 0"},
		{name: "over the bound", data: header(1025, byte(FrameData)), max: 1024, want: ErrMalformedFrame, reason: "1025 bytes is over the 1024-byte bound"},
		{name: "hostile length", data: header(0xFFFFFFFF, byte(FrameData)), want: ErrMalformedFrame, reason: "over the"},
		{name: "truncated length", data: append(bytes.Clone(good), 0, 0), want: io.ErrUnexpectedEOF, frames: 1},
		{name: "truncated before kind", data: binary.BigEndian.AppendUint32(nil, 3), want: io.ErrUnexpectedEOF},
		{name: "truncated payload", data: append(header(10, byte(FrameData)), 1, 2, 3), want: io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readAll(bytes.NewReader(tt.data), tt.max)
			if len(got) != tt.frames {
				t.Errorf("read %d good frames first, want %d", len(got), tt.frames)
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			var fe *FrameError
			if errors.As(err, &fe) {
				if fe.Offset != tt.offset {
					t.Errorf("error at offset %d, want %d", fe.Offset, tt.offset)
				}
				if !bytes.Contains([]byte(err.Error()), []byte(tt.reason)) {
					t.Errorf("error %q does not say %q", err, tt.reason)
				}
			}
		})
	}
}

// A frame's length is only a claim: the reader must not allocate it before
// the bytes arrive.
func TestFrameReaderGrowsWithData(t *testing.T) {
	data := binary.BigEndian.AppendUint32(nil, DefaultMaxFrameSize)
	data = append(data, byte(FrameData))
	data = append(data, make([]byte, 1000)...) // then the peer stops
	fr := NewFrameReader(bytes.NewReader(data), 0)
	if _, _, err := fr.Read(); err != io.ErrUnexpectedEOF {
		t.Fatalf("error %v, want io.ErrUnexpectedEOF", err)
	}
	if c := cap(fr.buf); c > 2*growStep {
		t.Errorf("a 16 MiB claim with 1000 bytes behind it grew the buffer to %d bytes, want at most %d", c, 2*growStep)
	}
}

func TestFrameWriterRejects(t *testing.T) {
	var buf bytes.Buffer
	fw := NewFrameWriter(&buf, 100)
	if err := fw.Write(FrameData, make([]byte, 100)); err == nil {
		t.Error("a 101-byte frame under a 100-byte bound was written")
	}
	if err := fw.Write(0, nil); err == nil {
		t.Error("a frame of kind 0 was written")
	}
	if err := fw.Write(frameKindEnd, nil); err == nil {
		t.Error("a frame of an unknown kind was written")
	}
	if err := fw.Write(FrameData, make([]byte, 99)); err != nil {
		t.Errorf("a frame at the bound: %v", err)
	}
	if fw.Flush(); buf.Len() != frameHeader+99 {
		t.Errorf("wrote %d bytes, want only the frame at the bound (%d)", buf.Len(), frameHeader+99)
	}
}

// FuzzFrameReader: whatever arrives, the reader returns frames within the
// bound or an error, never panics, and what it returns re-encodes to the
// bytes it consumed.
func FuzzFrameReader(f *testing.F) {
	f.Add(encodeFrames(f, 0, frame{FrameHello, []byte("gale")}, frame{FrameData, []byte{1, 2, 3}}))
	f.Add(encodeFrames(f, 0, frame{FrameHeartbeat, nil}, frame{FrameClose, nil}))
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0, 0, 1, 0, 2, 9})
	const max = 4096
	f.Fuzz(func(t *testing.T, data []byte) {
		frames, err := readAll(bytes.NewReader(data), max)
		if err == nil {
			t.Fatal("readAll returned no error")
		}
		var re []byte
		for _, fr := range frames {
			if len(fr.payload)+1 > max {
				t.Fatalf("frame of %d bytes over the %d-byte bound", len(fr.payload)+1, max)
			}
			re = append(re, encodeFrames(t, max, fr)...)
		}
		if !bytes.HasPrefix(data, re) {
			t.Fatalf("frames read do not re-encode to the input's prefix")
		}
		if err == io.EOF && len(re) != len(data) {
			t.Fatalf("clean EOF after %d of %d bytes", len(re), len(data))
		}
	})
}
