package bench

import (
	"math/rand/v2"
	"strings"
	"time"
)

// The fixed workload. Changing any of these changes every published number.
const (
	VocabularySize   = 1000 // distinct words
	WordsPerSentence = 8
	MinWordLen       = 5
	MaxWordLen       = 9 // lengths cycle MinWordLen..MaxWordLen, so the mean is exactly 7

	// BaseSeed is the paper [SpoutSeed] derives every spout's generator seed from.
	BaseSeed uint64 = 0x6761_6c65_6265_6e63 // "galebenc"

	vocabSeed1 uint64 = 0x853c_49e6_748f_ea9b
	vocabSeed2 uint64 = 0xda3e_39cb_94b9_5bdb
	sentStream uint64 = 0x5851_f42d_4c95_7f2d // PCG stream of every SentenceGen
)

// vocab is the vocabulary, built once from fixed seeds. Never modified.
var vocab = buildVocabulary()

func buildVocabulary() []string {
	rng := rand.New(rand.NewPCG(vocabSeed1, vocabSeed2))
	words := make([]string, 0, VocabularySize)
	seen := make(map[string]struct{}, VocabularySize)
	buf := make([]byte, MaxWordLen)
	for len(words) < VocabularySize {
		n := MinWordLen + len(words)%(MaxWordLen-MinWordLen+1)
		for i := range n {
			buf[i] = 'a' + byte(rng.IntN(26))
		}
		w := string(buf[:n])
		if _, dup := seen[w]; dup {
			continue // draw again with the same length
		}
		seen[w] = struct{}{}
		words = append(words, w)
	}
	return words
}

// Vocabulary returns a copy of the workload's VocabularySize distinct lowercase words.
func Vocabulary() []string {
	return append([]string(nil), vocab...)
}

// SpoutSeed returns the generator seed of spout task index (0-based), derived from
// BaseSeed so that every runner emits the same sentences from the same spout.
func SpoutSeed(index int) uint64 {
	// splitmix64 of the base seed advanced index+1 times
	z := BaseSeed + uint64(index+1)*0x9e37_79b9_7f4a_7c15
	z = (z ^ (z >> 30)) * 0xbf58_476d_1ce4_e5b9
	z = (z ^ (z >> 27)) * 0x94d0_49bb_1331_11eb
	return z ^ (z >> 31)
}

// SentenceGen generates the workload's sentences: WordsPerSentence words drawn
// uniformly from the vocabulary, joined by single spaces. The sequence is fully
// determined by the paper. A SentenceGen is not safe for concurrent use; give each
// spout its own.
type SentenceGen struct {
	pcg rand.PCG
}

// NewSentenceGen returns a generator seeded with seed (see SpoutSeed).
func NewSentenceGen(seed uint64) *SentenceGen {
	g := &SentenceGen{}
	g.pcg.Seed(seed, sentStream)
	return g
}

// Next returns the next sentence. It allocates once: the returned string.
func (g *SentenceGen) Next() string {
	var idx [WordsPerSentence]int
	n := WordsPerSentence - 1 // separators
	for i := 0; i < WordsPerSentence; i += 2 {
		x := g.pcg.Uint64()
		idx[i] = g.word(uint32(x))
		idx[i+1] = g.word(uint32(x >> 32))
		n += len(vocab[idx[i]]) + len(vocab[idx[i+1]])
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(vocab[idx[0]])
	for _, i := range idx[1:] {
		b.WriteByte(' ')
		b.WriteString(vocab[i])
	}
	return b.String()
}

// word maps 32 random bits to a uniform index in [0, VocabularySize) with Lemire's
// multiply-shift, drawing fresh bits in the rare biased case.
func (g *SentenceGen) word(x uint32) int {
	const n = VocabularySize
	m := uint64(x) * n
	if uint32(m) < n {
		const thresh = uint32((1 << 32) % n)
		for uint32(m) < thresh {
			m = uint64(uint32(g.pcg.Uint64())) * n
		}
	}
	return int(m >> 32)
}

// SplitWords calls fn with each word of s, where words are separated by single spaces
// (the format SentenceGen produces). The words are substrings of s; nothing is allocated.
func SplitWords(s string, fn func(word string)) {
	for {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			fn(s)
			return
		}
		fn(s[:i])
		s = s[i+1:]
	}
}

// AppendWords appends the words of s (as split by SplitWords) to dst and returns the
// extended slice. The words are substrings of s.
func AppendWords(dst []string, s string) []string {
	for {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			return append(dst, s)
		}
		dst = append(dst, s[:i])
		s = s[i+1:]
	}
}

// BusyWork keeps the calling goroutine busy for d, without sleeping: the count stage's
// extra per-word cost in overload tests. It returns at once when d ≤ 0.
func BusyWork(d time.Duration) {
	if d <= 0 {
		return
	}
	for start := time.Now(); time.Since(start) < d; {
	}
}
