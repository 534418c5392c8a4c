package fieldhash

import (
	"testing"
	"time"
)

func hashAll(vs ...any) uint64 {
	h := Seed
	for _, v := range vs {
		h = Add(h, v)
	}
	return h
}

// TestEqualValuesHashEqual checks the promise the fields grouping relies on:
// values a user considers equal land on the same task.
func TestEqualValuesHashEqual(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	tests := []struct {
		name string
		a, b any
	}{
		{"int widths", int(42), int64(42)},
		{"int8 and uint16", int8(7), uint16(7)},
		{"uint64 and int", uint64(1 << 40), int(1 << 40)},
		{"string and bytes", "apple", []byte("apple")},
		{"long string and bytes", "a sentence longer than eight bytes", []byte("a sentence longer than eight bytes")},
		{"float32 and float64", float32(0.5), float64(0.5)},
		{"time in two zones", ts, ts.In(time.FixedZone("x", 3600))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if ha, hb := hashAll(tc.a), hashAll(tc.b); ha != hb {
				t.Fatalf("hash(%#v) = %#x, hash(%#v) = %#x; want equal", tc.a, ha, tc.b, hb)
			}
		})
	}
}

func TestDistinctValuesHashDistinct(t *testing.T) {
	tests := []struct {
		name string
		a, b []any
	}{
		{"string vs int", []any{"1"}, []any{1}},
		{"bool vs int", []any{true}, []any{1}},
		{"field boundaries", []any{"ab", "c"}, []any{"a", "bc"}},
		{"field order", []any{"a", "b"}, []any{"b", "a"}},
		{"nil vs zero", []any{nil}, []any{0}},
		{"trailing zero byte", []any{"a"}, []any{"a\x00"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if ha, hb := hashAll(tc.a...), hashAll(tc.b...); ha == hb {
				t.Fatalf("hash(%q) == hash(%q) == %#x, want different", tc.a, tc.b, ha)
			}
		})
	}
}
