package box

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// TestBoxIsAString checks that a boxed string behaves as any(s) does: type
// switches, assertions, equality with any(s), map keys, reflection and
// formatting.
func TestBoxIsAString(t *testing.T) {
	var b Strings
	for _, s := range []string{"", "a", "hello world", strings.Repeat("x", 1000)} {
		v := b.Box(s)
		switch x := v.(type) {
		case string:
			if x != s {
				t.Fatalf("Box(%q) holds %q", s, x)
			}
		default:
			t.Fatalf("Box(%q) is a %T, want string", s, v)
		}
		if v != any(s) {
			t.Fatalf("Box(%q) != any(%q)", s, s)
		}
		if _, ok := v.(fmt.Stringer); ok {
			t.Fatalf("Box(%q) claims a String method", s)
		}
		if k := reflect.TypeOf(v).Kind(); k != reflect.String {
			t.Fatalf("Box(%q) reflects as %v", s, k)
		}
		if got := fmt.Sprint(v); got != s {
			t.Fatalf("fmt.Sprint(Box(%q)) = %q", s, got)
		}
		m := map[any]int{any(s): 1}
		if m[v] != 1 {
			t.Fatalf("Box(%q) does not find the map key any(%q)", s, s)
		}
	}
}

// TestBoxValuesAreIndependent checks that boxing more strings, past a
// chunk's end, never changes a value boxed before.
func TestBoxValuesAreIndependent(t *testing.T) {
	var b Strings
	const n = 3*chunkLen + 7
	vals := make([]any, n)
	for i := range vals {
		vals[i] = b.Box(fmt.Sprint("word-", i))
	}
	for i, v := range vals {
		if want := fmt.Sprint("word-", i); v != any(want) {
			t.Fatalf("value %d is %v, want %q", i, v, want)
		}
	}
}

// TestBoxSurvivesCollection checks that a boxed value keeps its string
// (and its chunk) alive through collections once the Strings that made it
// has moved on and been dropped.
func TestBoxSurvivesCollection(t *testing.T) {
	kept := make([]any, 0, 64)
	for round := range 64 {
		b := new(Strings)
		for i := range chunkLen + 1 {
			v := b.Box(strings.Repeat(string(rune('a'+round%26)), i%17+1) + fmt.Sprint(round, "/", i))
			if i == round {
				kept = append(kept, v)
			}
		}
		runtime.GC()
	}
	runtime.GC()
	for round, v := range kept {
		want := strings.Repeat(string(rune('a'+round%26)), round%17+1) + fmt.Sprint(round, "/", round)
		if v != any(want) {
			t.Fatalf("kept value %d is %v, want %q", round, v, want)
		}
	}
}

// TestBoxAllocatesPerChunk checks the point of the package: one allocation
// per chunk, not one per string.
func TestBoxAllocatesPerChunk(t *testing.T) {
	var b Strings
	sink := make([]any, chunkLen)
	s := "word"
	allocs := testing.AllocsPerRun(10, func() {
		for i := range sink {
			sink[i] = b.Box(s)
		}
	})
	if allocs > 1 {
		t.Fatalf("boxing %d strings took %.1f allocations, want at most 1", chunkLen, allocs)
	}
}

func BenchmarkBox(b *testing.B) {
	var bx Strings
	sink := make([]any, 1024)
	s := "word"
	for i := 0; b.Loop(); i++ {
		sink[i&1023] = bx.Box(s)
	}
}

func BenchmarkConvert(b *testing.B) {
	sink := make([]any, 1024)
	s := []string{"word"}
	for i := 0; b.Loop(); i++ {
		sink[i&1023] = s[0][:len(s[0])-i&1]
	}
}
