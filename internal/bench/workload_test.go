package bench

import (
	"slices"
	"strings"
	"testing"
)

func TestVocabulary(t *testing.T) {
	v := Vocabulary()
	if len(v) != VocabularySize {
		t.Fatalf("len(Vocabulary()) = %d, want %d", len(v), VocabularySize)
	}
	seen := make(map[string]bool, len(v))
	total := 0
	for _, w := range v {
		if seen[w] {
			t.Errorf("word %q appears twice", w)
		}
		seen[w] = true
		if len(w) < MinWordLen || len(w) > MaxWordLen {
			t.Errorf("word %q has length %d, want %d..%d", w, len(w), MinWordLen, MaxWordLen)
		}
		if strings.Trim(w, "abcdefghijklmnopqrstuvwxyz") != "" {
			t.Errorf("word %q is not all lowercase letters", w)
		}
		total += len(w)
	}
	if avg := float64(total) / float64(len(v)); avg < 6.9 || avg > 7.1 {
		t.Errorf("average word length = %.3f, want ≈ 7", avg)
	}
	if !slices.Equal(buildVocabulary(), v) {
		t.Error("buildVocabulary() is not deterministic")
	}
	v[0] = "changed"
	if vocab[0] == "changed" {
		t.Error("Vocabulary() exposes the package's slice; want a copy")
	}
}

func TestSentenceGen(t *testing.T) {
	inVocab := make(map[string]bool, VocabularySize)
	for _, w := range vocab {
		inVocab[w] = true
	}
	g := NewSentenceGen(SpoutSeed(0))
	freq := make(map[string]int, VocabularySize)
	const n = 100_000
	for range n {
		s := g.Next()
		words := strings.Split(s, " ")
		if len(words) != WordsPerSentence {
			t.Fatalf("sentence %q has %d words, want %d", s, len(words), WordsPerSentence)
		}
		for _, w := range words {
			if !inVocab[w] {
				t.Fatalf("sentence %q has word %q, not in the vocabulary", s, w)
			}
			freq[w]++
		}
	}
	// Uniform draws: 800 per word expected, σ ≈ 28; ±25% is about 7σ.
	if len(freq) != VocabularySize {
		t.Errorf("%d sentences used %d distinct words, want all %d", n, len(freq), VocabularySize)
	}
	want := n * WordsPerSentence / VocabularySize
	for w, c := range freq {
		if c < want*3/4 || c > want*5/4 {
			t.Errorf("word %q drawn %d times in %d sentences, want ≈ %d (uniform)", w, c, n, want)
		}
	}
}

func TestSentenceGenDeterministic(t *testing.T) {
	a, b, c := NewSentenceGen(42), NewSentenceGen(42), NewSentenceGen(43)
	differ := false
	for i := range 1000 {
		sa, sb, sc := a.Next(), b.Next(), c.Next()
		if sa != sb {
			t.Fatalf("sentence %d with seed 42: %q then %q; want the same", i, sa, sb)
		}
		differ = differ || sa != sc
	}
	if !differ {
		t.Error("seeds 42 and 43 produced the same 1000 sentences")
	}
}

func TestSpoutSeedDistinct(t *testing.T) {
	seen := map[uint64]int{}
	for i := range 10_000 {
		s := SpoutSeed(i)
		if j, dup := seen[s]; dup {
			t.Fatalf("SpoutSeed(%d) = SpoutSeed(%d) = %#x", i, j, s)
		}
		seen[s] = i
	}
	if SpoutSeed(3) != SpoutSeed(3) {
		t.Error("SpoutSeed(3) is not deterministic")
	}
}

func TestSentenceGenAllocs(t *testing.T) {
	g := NewSentenceGen(1)
	if got := testing.AllocsPerRun(1000, func() { _ = g.Next() }); got != 1 {
		t.Errorf("Next allocates %v times per sentence, want 1", got)
	}
}

func TestSplitWords(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"one word", "alpha", []string{"alpha"}},
		{"two words", "alpha beta", []string{"alpha", "beta"}},
		{"eight words", "a bb ccc dddd eeeee ffffff ggggggg hhhhhhhh",
			[]string{"a", "bb", "ccc", "dddd", "eeeee", "ffffff", "ggggggg", "hhhhhhhh"}},
		{"empty", "", []string{""}},
		{"double space keeps an empty word", "a  b", []string{"a", "", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			SplitWords(tt.in, func(w string) { got = append(got, w) })
			if !slices.Equal(got, tt.want) {
				t.Errorf("SplitWords(%q) gave %q, want %q", tt.in, got, tt.want)
			}
			if got := AppendWords(nil, tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("AppendWords(nil, %q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestSplitWordsAllocs(t *testing.T) {
	s := NewSentenceGen(1).Next()
	n := 0
	if got := testing.AllocsPerRun(1000, func() { SplitWords(s, func(string) { n++ }) }); got != 0 {
		t.Errorf("SplitWords allocates %v times per sentence, want 0", got)
	}
	buf := make([]string, 0, WordsPerSentence)
	if got := testing.AllocsPerRun(1000, func() { buf = AppendWords(buf[:0], s) }); got != 0 {
		t.Errorf("AppendWords into a big enough slice allocates %v times, want 0", got)
	}
}

func BenchmarkSentenceGenNext(b *testing.B) {
	g := NewSentenceGen(1)
	b.ReportAllocs()
	for b.Loop() {
		_ = g.Next()
	}
}

func BenchmarkSplitWords(b *testing.B) {
	s := NewSentenceGen(1).Next()
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		SplitWords(s, func(string) { n++ })
	}
}
