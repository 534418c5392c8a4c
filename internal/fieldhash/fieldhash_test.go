package fieldhash

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// stringer is a user type hashed through its String method.
type stringer struct{ id int }

func (s stringer) String() string { return "user-" + string(rune('a'+s.id)) }

// point is a user type with no String method, hashed by its %#v form.
type point struct{ X, Y int }

// The hash is part of the wire contract: every worker process, of every
// version, must route a key to the same task, and a topology restarted
// on a new build must send a key where its state is. These golden values
// pin Add for a spread of values of every type it handles, and of the
// string lengths that take each path of addString; a change to the hash
// fails here. Do not update them: a hash that must change is a new
// protocol version.
func TestGoldenValues(t *testing.T) {
	cases := []struct {
		name string
		v    any
		want uint64
	}{
		{"string empty", "", 0x69bb92caae585846},
		{"string 1 byte", "a", 0x3f0153fcb6b89e24},
		{"string 3 bytes", "abc", 0x5e9803315ff2ada9},
		{"string 4 bytes", "gale", 0x91135f49013801bd},
		{"string 7 bytes", "abcdefg", 0x2f775f8346651451},
		{"string 8 bytes", "abcdefgh", 0x3cc3221907806a91},
		{"string 9 bytes", "abcdefghi", 0x03b2ab33dc1898b4},
		{"string 16 bytes", "0123456789abcdef", 0x601e4d046b63cc4f},
		{"string 17 bytes", "0123456789abcdefg", 0x8d64275d29f05e67},
		{"string long", "a sentence longer than eight bytes", 0x4101a42e257da35d},
		{"string 1 KiB", strings.Repeat("xyz", 341) + "w", 0x7aa507a5d87feafb},
		{"string UTF-8", "Grüße, 世界", 0x436a42b790760fa0},
		{"string NUL", "\x00", 0x7c9161d305613444},
		{"bytes", []byte("gale"), 0x91135f49013801bd},
		{"bytes empty", []byte{}, 0x69bb92caae585846},
		{"int 0", 0, 0xdd5b2ef5cce45227},
		{"int 42", 42, 0x5997407ec7f1933c},
		{"int -1", -1, 0x846d57577912e4b7},
		{"int max", math.MaxInt, 0x046d57537912e4b7},
		{"int min", math.MinInt, 0x5d5b2ef1cce45227},
		{"int64 42", int64(42), 0x5997407ec7f1933c},
		{"int64 -1", int64(-1), 0x846d57577912e4b7},
		{"int32 42", int32(42), 0x5997407ec7f1933c},
		{"int32 min", int32(math.MinInt32), 0x9635434217973f8b},
		{"int16 -300", int16(-300), 0x328012903fa3f577},
		{"int8 -7", int8(-7), 0x39ba31ad9be6cbc9},
		{"uint 42", uint(42), 0x5997407ec7f1933c},
		{"uint64 max", uint64(math.MaxUint64), 0x846d57577912e4b7},
		{"uint32 max", uint32(math.MaxUint32), 0x8b38810e03bc567f},
		{"uint16 65535", uint16(65535), 0x0ed71b8f26458257},
		{"uint8 255", uint8(255), 0xf046dd40d6840917},
		{"bool true", true, 0xd1dfd6ec53791685},
		{"bool false", false, 0x33a85d30c37fcc34},
		{"float64 0", 0.0, 0x23d8b82320f8e4af},
		{"float64 -0", math.Copysign(0, -1), 0xa3d8b82720f8e4af},
		{"float64 1.5", 1.5, 0xd100b824b638e4af},
		{"float64 -1e300", -1e300, 0xd1da2bcef4a404a1},
		{"float64 +Inf", math.Inf(1), 0xf1a8b825b378e4af},
		{"float64 NaN", math.NaN(), 0xaf3831dec4462f0e},
		{"float32 1.5", float32(1.5), 0xd100b824b638e4af},
		{"float32 0.1", float32(0.1), 0xee7971af6df6a8fe},
		{"nil", nil, 0x3af5d33da993bc5d},
		{"time", time.Date(2026, 12, 1, 8, 0, 0, 123456789, time.UTC), 0x64db3304803bebf2},
		{"time other zone, same instant", time.Date(2026, 12, 1, 9, 0, 0, 123456789, time.FixedZone("CET", 3600)), 0x64db3304803bebf2},
		{"Stringer", stringer{2}, 0x779e36aa8b7c2f28},
		{"other type", point{1, 2}, 0xae2a6d051361becf},
	}
	for _, c := range cases {
		if got := Add(Seed, c.v); got != c.want {
			t.Errorf("%s: Add(Seed, %#v) = %#016x, want %#016x", c.name, c.v, got, c.want)
		}
	}
	// Several fields, as a fields grouping on more than one hashes them.
	if got, want := Add(Add(Add(Seed, "user-7"), 42), true), uint64(0xd426bc4c5e345084); got != want {
		t.Errorf("Add over (\"user-7\", 42, true) = %#016x, want %#016x", got, want)
	}
	if got, want := String("gale"), uint64(0x91135f49013801bd); got != want {
		t.Errorf("String(\"gale\") = %#016x, want %#016x", got, want)
	}
}

// Bucket is pinned as the hash is: it picks the task.
func TestGoldenBuckets(t *testing.T) {
	for _, c := range []struct {
		h       uint64
		n, want int
	}{
		{0x0000000000000000, 1, 0},
		{0x0000000000000000, 7, 0},
		{0x0000000000000001, 7, 6},
		{0xcbf29ce484222325, 2, 1},
		{0xcbf29ce484222325, 16, 14},
		{0xffffffffffffffff, 3, 0},
		{0x0123456789abcdef, 100, 16},
		{0xfedcba9876543210, 1000, 78},
		{0x9e3779b97f4a7c15, 65536, 37697},
	} {
		if got := Bucket(c.h, c.n); got != c.want {
			t.Errorf("Bucket(%#016x, %d) = %d, want %d", c.h, c.n, got, c.want)
		}
	}
}

// Values equal in Go hash equal, and the hash spreads keys over buckets.
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
