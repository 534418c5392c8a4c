package gale_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
)

// TestEmitStringIsEmit checks that EmitString, from a spout, a bolt and a
// basic bolt, emits the tuple Emit with the one string would: the same
// values, anchored and acked the same way, and serializable (the run
// encodes every tuple, as a send to another worker would).
func TestEmitStringIsEmit(t *testing.T) {
	const n = 600 // more than one chunk of boxed strings per task
	b := gale.NewTopologyBuilder()
	b.SetSpout("lines", func() gale.Spout {
		return linesSpout(n, func(i int) string { return fmt.Sprintf("w%d x%d", i, i) })
	}, 1)
	b.SetBolt("split", splitWords, 2).ShuffleGrouping("lines")
	b.SetBasicBolt("upper", func() gale.BasicBolt { return &upperBolt{} }, 2).FieldsGrouping("split", "word")
	topo := build(t, b)
	res := complete(t, topo, galetest.Options{Config: gale.Config{gale.TopologyTestingAlwaysTrySerialize: true}})

	if got := len(res.Acked("lines")); got != n {
		t.Fatalf("%d lines acked, want %d (failed: %v)", got, n, res.Failed("lines"))
	}
	var lines, words, uppers []string
	for _, v := range res.Emitted("lines") {
		lines = append(lines, v[0].(string))
	}
	for _, v := range res.Emitted("split") {
		words = append(words, v[0].(string))
	}
	for _, v := range res.Emitted("upper") {
		if len(v) != 1 {
			t.Fatalf("upper emitted %v, want one value", v)
		}
		uppers = append(uppers, v[0].(string))
	}
	var wantLines, wantWords, wantUppers []string
	for i := range n {
		wantLines = append(wantLines, fmt.Sprintf("w%d x%d", i, i))
		wantWords = append(wantWords, fmt.Sprint("w", i), fmt.Sprint("x", i))
		wantUppers = append(wantUppers, fmt.Sprint("W", i), fmt.Sprint("X", i))
	}
	for _, c := range []struct {
		what      string
		got, want []string
	}{{"lines", lines, wantLines}, {"words", words, wantWords}, {"upper-cased words", uppers, wantUppers}} {
		slices.Sort(c.got)
		slices.Sort(c.want)
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: %d emitted, want %d (first %v)", c.what, len(c.got), len(c.want), c.got[:min(4, len(c.got))])
		}
	}
}

// linesSpout is a spout that emits line(i) with EmitString under message id
// i, for i from 0 to n-1.
func linesSpout(n int, line func(i int) string) *funcSpout {
	return &funcSpout{
		declare: func(d gale.OutputDeclarer) { d.Declare("line") },
		next: func(s *funcSpout) {
			if s.n < n {
				if _, err := s.Collector.EmitString(s.n, line(s.n)); err != nil {
					panic(err)
				}
				s.n++
			}
		},
	}
}

// splitWords is a bolt that emits each word of its input's string with
// EmitString, anchored, and acks the input.
func splitWords() gale.Bolt {
	return &funcBolt{
		declare: func(d gale.OutputDeclarer) { d.Declare("word") },
		execute: func(b *funcBolt, t *gale.Tuple) {
			for w := range strings.FieldsSeq(t.GetString(0)) {
				if _, err := b.Collector.EmitString(t, w); err != nil {
					panic(err)
				}
			}
			b.Collector.Ack(t)
		},
	}
}

type upperBolt struct{ gale.BaseBasicBolt }

func (*upperBolt) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("word") }
func (*upperBolt) Execute(t *gale.Tuple, c *gale.BasicCollector) error {
	_, err := c.EmitString(strings.ToUpper(t.GetString(0)))
	return err
}

// TestEmitStringRoutesAndAcks runs word count's shape with no observer
// (RunLocal), where EmitString takes its shortcut to a stream's one
// subscriber: every word reaches the task its fields grouping names, the
// anchored trees complete (and fail when a word fails), and with a second subscriber every word reaches
// both. A stream of two fields refuses EmitString either way.
func TestEmitStringRoutesAndAcks(t *testing.T) {
	const n = 3000
	for _, subscribers := range []int{1, 2} {
		t.Run(fmt.Sprint(subscribers, " subscribers"), func(t *testing.T) {
			var (
				mu        sync.Mutex
				taskOf    = make([]map[string]int, subscribers) // per subscriber: word → the task that got it
				got       = make([]int, subscribers)
				misrout   []string
				acked     int
				failed    []error
				wrongFail []int // lines failed that had no word failed
				arityErr  error
			)
			for i := range taskOf {
				taskOf[i] = make(map[string]int)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			b := gale.NewTopologyBuilder()
			b.SetSpout("lines", func() gale.Spout {
				s := linesSpout(n, func(i int) string { return fmt.Sprintf("w%d x%d", i%97, i%89) })
				s.ack = func(*funcSpout, any) {
					mu.Lock()
					defer mu.Unlock()
					if acked++; acked+len(failed) == n {
						cancel()
					}
				}
				s.fail = func(_ *funcSpout, id any, err error) {
					mu.Lock()
					defer mu.Unlock()
					if failed = append(failed, err); acked+len(failed) == n {
						cancel()
					}
					if id.(int)%89 != 7 {
						wrongFail = append(wrongFail, id.(int))
					}
				}
				return s
			}, 1)
			b.SetBolt("split", splitWords, 2).ShuffleGrouping("lines").AddConfiguration(gale.TopologyTupleReuse, true)
			for i := range subscribers {
				b.SetBolt(fmt.Sprint("count", i), func() gale.Bolt {
					return &funcBolt{
						declare: func(d gale.OutputDeclarer) { d.Declare("word", "n") },
						execute: func(b *funcBolt, t *gale.Tuple) {
							w, task := t.GetString(0), b.tc.TaskID()
							if i == 0 && b.n == 0 {
								b.n++
								_, err := b.Collector.EmitString(t, w)
								mu.Lock()
								arityErr = err
								mu.Unlock()
							}
							mu.Lock()
							if prev, ok := taskOf[i][w]; ok && prev != task {
								misrout = append(misrout, fmt.Sprintf("count%d: %q at tasks %d and %d", i, w, prev, task))
							}
							taskOf[i][w] = task
							got[i]++
							mu.Unlock()
							if i == 0 && w == "x7" {
								// The line's tree fails: the word is anchored on it.
								b.Collector.Fail(t, errors.New("x7"))
								return
							}
							b.Collector.Ack(t)
						},
					}
				}, 3).FieldsGrouping("split", "word")
			}
			if err := gale.RunLocal(ctx, "emit-string", nil, build(t, b), gale.RunOptions{Logger: testLogger(t)}); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			wantFailed := 0
			for i := range n {
				if i%89 == 7 {
					wantFailed++
				}
			}
			if acked != n-wantFailed || len(failed) != wantFailed || len(wrongFail) > 0 {
				t.Fatalf("%d of %d lines acked and %d failed, want %d failed: the lines with x7 (wrongly failed: %v)",
					acked, n, len(failed), wantFailed, wrongFail[:min(3, len(wrongFail))])
			}
			for i := range subscribers {
				if got[i] != 2*n {
					t.Errorf("count%d got %d words, want %d", i, got[i], 2*n)
				}
				if len(taskOf[i]) != 97+89 {
					t.Errorf("count%d saw %d distinct words, want %d", i, len(taskOf[i]), 97+89)
				}
			}
			if len(misrout) > 0 {
				t.Errorf("fields grouping sent a word to two tasks: %v", misrout[:min(3, len(misrout))])
			}
			if !errors.Is(arityErr, gale.ErrWrongArity) {
				t.Errorf("EmitString on a stream of two fields returned %v, want an error wrapping ErrWrongArity", arityErr)
			}
		})
	}
}
