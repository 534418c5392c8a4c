package codec

import "testing"

var benchTuples = []struct {
	name string
	vals []any
}{
	{"word", []any{"example"}},
	{"word-count", []any{"example", int64(12345)}},
}

func BenchmarkAppendValues(b *testing.B) {
	r := NewRegistry()
	for _, bt := range benchTuples {
		b.Run(bt.name, func(b *testing.B) {
			dst := make([]byte, 0, 64)
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if dst, err = r.AppendValues(dst[:0], bt.vals); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(dst)))
		})
	}
}

func BenchmarkDecodeValues(b *testing.B) {
	r := NewRegistry()
	for _, bt := range benchTuples {
		b.Run(bt.name, func(b *testing.B) {
			enc, err := r.AppendValues(nil, bt.vals)
			if err != nil {
				b.Fatal(err)
			}
			dst := make([]any, 0, 4)
			b.SetBytes(int64(len(enc)))
			b.ReportAllocs()
			for b.Loop() {
				if dst, _, err = r.DecodeValues(enc, dst[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
