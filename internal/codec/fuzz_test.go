package codec

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// FuzzDecodeValues feeds arbitrary bytes to the decoder. It must not panic,
// must fail only with ErrMalformed, and whatever it decodes must re-encode
// to bytes that decode to the same values and encode to the same bytes.
func FuzzDecodeValues(f *testing.F) {
	r := testRegistry()
	ts := time.Date(2026, 11, 30, 5, 0, 0, 7, time.FixedZone("CET", 3600))
	seeds := [][]any{
		{},
		{"example"},
		{"word", int64(3)},
		{nil, true, false, int8(-1), int16(300), int32(-70000), 1 << 40, uint(7), uint8(255),
			uint16(65535), uint32(1 << 31), uint64(math.MaxUint64), uintptr(9)},
		{float32(1.5), math.NaN(), math.Copysign(0, -1), math.Inf(1)},
		{[]byte(nil), []byte{}, []byte("bytes"), strings.Repeat("s", 200)},
		{ts, time.Time{}, ts.UTC()},
		{[]any{1, []any{"x"}, []any(nil), []any{}}, map[string]any{"a": 1, "b": map[string]any{"c": nil}}},
		{map[string]any(nil), map[string]any{}},
		{point{1, -2}, label("lbl"), []any{point{3, 4}}},
	}
	for _, vals := range seeds {
		b, err := r.AppendValues(nil, vals)
		if err != nil {
			f.Fatalf("seed %#v: %v", vals, err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		vals, n, err := r.DecodeValues(in, nil)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("DecodeValues error %v is not ErrMalformed", err)
			}
			return
		}
		if n < 0 || n > len(in) {
			t.Fatalf("DecodeValues consumed %d of %d bytes", n, len(in))
		}
		enc, err := r.AppendValues(nil, vals)
		if err != nil {
			t.Fatalf("re-encoding %#v: %v", vals, err)
		}
		vals2, n2, err := r.DecodeValues(enc, nil)
		if err != nil {
			t.Fatalf("decoding re-encoded % x: %v", enc, err)
		}
		if n2 != len(enc) {
			t.Fatalf("decoding re-encoded: consumed %d of %d bytes", n2, len(enc))
		}
		if !equalLists(vals, vals2) {
			t.Fatalf("re-encode round trip:\n got %#v\nwant %#v", vals2, vals)
		}
		enc2, err := r.AppendValues(nil, vals2)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not stable (err %v):\n% x\n% x", err, enc, enc2)
		}
	})
}
