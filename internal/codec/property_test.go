package codec

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// valueGen generates random value trees covering every kind the codec
// supports, biased towards edge values.
type valueGen struct {
	rng *rand.Rand
}

func (g *valueGen) int64() int64 {
	switch g.rng.IntN(4) {
	case 0:
		return []int64{0, 1, -1, math.MinInt64, math.MaxInt64, 63, -64, 64}[g.rng.IntN(8)]
	case 1:
		return int64(g.rng.Uint64()) >> g.rng.IntN(64) // all magnitudes
	default:
		return g.rng.Int64N(1000) - 500
	}
}

func (g *valueGen) uint64() uint64 {
	if g.rng.IntN(4) == 0 {
		return []uint64{0, 1, 127, 128, math.MaxUint64}[g.rng.IntN(5)]
	}
	return g.rng.Uint64() >> g.rng.IntN(64)
}

func (g *valueGen) float64() float64 {
	if g.rng.IntN(3) == 0 {
		return []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1),
			math.MaxFloat64, math.SmallestNonzeroFloat64}[g.rng.IntN(7)]
	}
	return math.Float64frombits(g.rng.Uint64())
}

func (g *valueGen) string() string {
	n := g.rng.IntN(20)
	if g.rng.IntN(10) == 0 {
		n = g.rng.IntN(300)
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.rng.Uint32())
	}
	return string(b)
}

func (g *valueGen) time() time.Time {
	sec := g.rng.Int64N(1<<40) - 1<<39
	t := time.Unix(sec, g.rng.Int64N(1e9))
	switch g.rng.IntN(3) {
	case 0:
		return t.UTC()
	case 1:
		return t.In(time.FixedZone(g.string(), g.rng.IntN(2*18*3600)-18*3600))
	default:
		return time.Time{}
	}
}

// value returns a random value; depth bounds the nesting of lists and maps.
func (g *valueGen) value(depth int) any {
	kinds := 24
	if depth <= 0 {
		kinds = 20 // scalars only
	}
	switch g.rng.IntN(kinds) {
	case 0:
		return nil
	case 1:
		return g.rng.IntN(2) == 0
	case 2:
		return int(g.int64())
	case 3:
		return int8(g.int64())
	case 4:
		return int16(g.int64())
	case 5:
		return int32(g.int64())
	case 6:
		return g.int64()
	case 7:
		return uint(g.uint64())
	case 8:
		return uint8(g.uint64())
	case 9:
		return uint16(g.uint64())
	case 10:
		return uint32(g.uint64())
	case 11:
		return g.uint64()
	case 12:
		return uintptr(g.uint64())
	case 13:
		return float32(g.float64())
	case 14:
		return g.float64()
	case 15:
		return g.string()
	case 16:
		switch g.rng.IntN(4) {
		case 0:
			return []byte(nil)
		case 1:
			return []byte{}
		}
		return []byte(g.string())
	case 17:
		return g.time()
	case 18:
		return point{int32(g.int64()), int32(g.int64())}
	case 19:
		return label(g.string())
	case 20, 21:
		if g.rng.IntN(8) == 0 {
			return []any(nil)
		}
		l := make([]any, g.rng.IntN(6))
		for i := range l {
			l[i] = g.value(depth - 1)
		}
		return l
	default:
		if g.rng.IntN(8) == 0 {
			return map[string]any(nil)
		}
		n := g.rng.IntN(6)
		m := make(map[string]any, n)
		for range n {
			m[g.string()] = g.value(depth - 1)
		}
		return m
	}
}

// TestRoundTripRandom encodes random value lists, decodes them and checks
// that the result equals the input and re-encodes to the same bytes.
func TestRoundTripRandom(t *testing.T) {
	seed := testSeed(t)
	g := &valueGen{rng: rand.New(rand.NewPCG(seed, seed))}
	r := testRegistry()
	var buf, buf2 []byte
	var dec []any
	for i := range 5000 {
		vals := make([]any, g.rng.IntN(8))
		for j := range vals {
			vals[j] = g.value(g.rng.IntN(5))
		}
		var err error
		if buf, err = r.AppendValues(buf[:0], vals); err != nil {
			t.Fatalf("seed %d, case %d: AppendValues(%#v): %v", seed, i, vals, err)
		}
		var n int
		if dec, n, err = r.DecodeValues(buf, dec[:0]); err != nil {
			t.Fatalf("seed %d, case %d: DecodeValues of %#v: %v", seed, i, vals, err)
		}
		if n != len(buf) {
			t.Fatalf("seed %d, case %d: consumed %d of %d bytes", seed, i, n, len(buf))
		}
		if !equalLists(vals, dec) {
			t.Fatalf("seed %d, case %d: round trip\n got %#v\nwant %#v", seed, i, dec, vals)
		}
		if buf2, err = r.AppendValues(buf2[:0], dec); err != nil || !bytes.Equal(buf, buf2) {
			t.Fatalf("seed %d, case %d: re-encoding differs (err %v):\n got % x\nwant % x", seed, i, err, buf2, buf)
		}
	}
}
