// Package xrand is a small, fast, non-cryptographic random source for tuple
// ids. Each executor owns one Source; it is not safe for concurrent use.
package xrand

// Source is a wyrand generator: one multiply per value, 2^64 period, and
// good enough statistical quality for XOR-acking edge ids and shuffles.
type Source struct {
	state uint64
}

// New returns a Source seeded with seed.
func New(seed uint64) *Source {
	return &Source{state: seed}
}

// Uint64 returns a pseudo-random 64-bit value.
func (s *Source) Uint64() uint64 {
	s.state += 0xa0761d6478bd642f
	hi, lo := mul64(s.state, s.state^0xe7037ed1a0b428db)
	return hi ^ lo
}

// NonZero returns a pseudo-random value that is never zero. Edge and root
// ids must be non-zero: zero is the XOR identity and would make an
// unfinished tree look complete.
func (s *Source) NonZero() uint64 {
	for {
		if v := s.Uint64(); v != 0 {
			return v
		}
	}
}

// Intn returns a value in [0, n). n must be > 0.
func (s *Source) Intn(n int) int {
	hi, _ := mul64(s.Uint64(), uint64(n))
	return int(hi)
}

func mul64(a, b uint64) (hi, lo uint64) {
	const mask32 = 1<<32 - 1
	a0, a1 := a&mask32, a>>32
	b0, b1 := b&mask32, b>>32
	w0 := a0 * b0
	t := a1*b0 + w0>>32
	w1 := t&mask32 + a0*b1
	hi = a1*b1 + t>>32 + w1>>32
	lo = a * b
	return
}
