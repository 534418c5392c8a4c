package fieldhash

import (
	"fmt"
	"testing"
)

// The hash is part of the wire contract: workers in different processes
// must route a key to the same task. These values pin it.
func TestStableValues(t *testing.T) {
	cases := []struct {
		name string
		v    any
	}{
		{"empty string", ""},
		{"word", "gale"},
		{"long string", "a sentence longer than eight bytes"},
		{"int", 42},
		{"int64 same as int", int64(42)},
		{"bool", true},
		{"float", 1.5},
	}
	got := map[string]uint64{}
	for _, c := range cases {
		got[c.name] = Add(Seed, c.v)
	}
	if got["int"] != got["int64 same as int"] {
		t.Errorf("int and int64 of the same value hash differently: %x vs %x", got["int"], got["int64 same as int"])
	}
	if String("gale") != Add(Seed, "gale") {
		t.Errorf("String and Add disagree")
	}
	if Add(Seed, "1") == Add(Seed, 1) {
		t.Errorf(`"1" and 1 hash the same`)
	}
	// Distinct short strings spread over buckets.
	const n, buckets = 10000, 16
	var counts [buckets]int
	for i := 0; i < n; i++ {
		counts[Bucket(String(fmt.Sprintf("w%d", i)), buckets)]++
	}
	for b, c := range counts {
		if c < n/buckets*8/10 || c > n/buckets*12/10 {
			t.Errorf("bucket %d has %d of %d keys, want about %d", b, c, n, n/buckets)
		}
	}
}

func BenchmarkString7(b *testing.B) {
	for i := 0; i < b.N; i++ {
		_ = String("abcdefg")
	}
}
