package starter_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/examples/starter"
	"github.com/gale-stream/gale/galetest"
)

// port is one of storm-starter's topologies with fixed inputs and the
// output Storm's gives for them. The same port runs under
// galetest.Complete (with its spouts replaced by Sources) and in 3 worker
// processes (with FixedSpouts emitting Sources, and a sink after last).
type port struct {
	name string // registered for the worker processes
	// build wires the topology with spouts made by spout, by id.
	build   func(spout func(id string) func() gale.Spout) *gale.TopologyBuilder
	fields  map[string][]string      // each spout's output fields
	sources map[string][]gale.Values // each spout's values
	conf    gale.Config
	horizon time.Duration // simulated time under Complete
	last    string        // the component whose output is the result
	result  func(out []gale.Values) string
	want    string
}

// spoutsFor returns the spout factories of the port: placeholders
// declaring the fields, which Complete's Sources replace, or, with values,
// FixedSpouts emitting them.
func (p port) spoutsFor(values bool) func(id string) func() gale.Spout {
	return func(id string) func() gale.Spout {
		return func() gale.Spout {
			s := &galetest.FixedSpout{Fields: p.fields[id]}
			if values {
				s.Values = p.sources[id]
			}
			return s
		}
	}
}

var exclamationPort = port{
	name: "starter-exclamation",
	build: func(spout func(string) func() gale.Spout) *gale.TopologyBuilder {
		return starter.ExclamationTopology(spout("word"))
	},
	fields:  map[string][]string{"word": {"word"}},
	sources: map[string][]gale.Values{"word": {{"nathan"}, {"mike"}, {"jackson"}, {"golda"}, {"bertels"}}},
	last:    "exclaim2",
	result:  func(out []gale.Values) string { return sortedJoin(out, "%v") },
	want:    "bertels!!!!!! golda!!!!!! jackson!!!!!! mike!!!!!! nathan!!!!!!",
}

var wordCountPort = port{
	name: "starter-wordcount",
	build: func(spout func(string) func() gale.Spout) *gale.TopologyBuilder {
		return starter.WordCountTopology(spout("spout"))
	},
	fields: map[string][]string{"spout": {"sentence"}},
	sources: map[string][]gale.Values{"spout": {{"the cow jumped over the moon"}, {"an apple a day keeps the doctor away"},
		{"four score and seven years ago"}, {"snow white and the seven dwarfs"}, {"i am at two with nature"}}},
	last: "count",
	// The last count of each word, fmt printing the map in key order.
	result: func(out []gale.Values) string {
		got := map[string]int{}
		for _, v := range out {
			w, n := v[0].(string), v[1].(int)
			got[w] = max(got[w], n)
		}
		return fmt.Sprint(got)
	},
	want: "map[a:1 ago:1 am:1 an:1 and:2 apple:1 at:1 away:1 cow:1 day:1 doctor:1 dwarfs:1 four:1 i:1 jumped:1 keeps:1 moon:1 nature:1 over:1 score:1 seven:2 snow:1 the:4 two:1 white:1 with:1 years:1]",
}

// rollingWords is "nathan" 5 times, "mike" 4... "bertels" once.
func rollingWords() []gale.Values {
	var src []gale.Values
	for i, w := range []string{"nathan", "mike", "jackson", "golda", "bertels"} {
		for range 5 - i {
			src = append(src, gale.Values{w})
		}
	}
	return src
}

var rollingTopWordsPort = port{
	name: "starter-rolling-top-words",
	build: func(spout func(string) func() gale.Spout) *gale.TopologyBuilder {
		return starter.RollingTopWords(spout("wordGenerator"), 0)
	},
	fields:  map[string][]string{"wordGenerator": {"word"}},
	sources: map[string][]gale.Values{"wordGenerator": rollingWords()},
	// The rankers' N comes from the user key, read in Prepare.
	conf:    gale.Config{starter.TopNKey: 3},
	horizon: 60 * time.Second,
	last:    "finalRanker",
	// The fullest rankings the final ranker emitted (the greatest total
	// count, then the most items), with their size. Which snapshots it
	// emits depends on how the rankers' and the counter's ticks at the
	// same instant interleave, as in Storm; the fullest is the one taken
	// while every word was still in the counter's window.
	result: func(out []gale.Values) string {
		var best *starter.Rankings
		total := func(r *starter.Rankings) (n int64) {
			for _, x := range r.Items {
				n += int64(x.Count)
			}
			return n
		}
		for _, v := range out {
			r := v[0].(*starter.Rankings)
			if best == nil || total(r) > total(best) || total(r) == total(best) && r.Size() > best.Size() {
				best = r
			}
		}
		if best == nil {
			return "no rankings"
		}
		var items []string
		for _, x := range best.Items {
			items = append(items, fmt.Sprintf("%v=%d", x.Obj, x.Count))
		}
		return fmt.Sprintf("top %d: %s", best.MaxSize, strings.Join(items, " "))
	},
	want: "top 3: nathan=5 mike=4 jackson=3",
}

// singleJoinSources are Storm's example's: genders of ids 0..9, and ages
// of 0..19, of which 10..19 never find a gender.
func singleJoinSources() map[string][]gale.Values {
	var gender, age []gale.Values
	for i := range 10 {
		g := "female"
		if i%2 == 0 {
			g = "male"
		}
		gender = append(gender, gale.Values{i, g})
	}
	for i := range 20 {
		age = append(age, gale.Values{i, i + 20})
	}
	return map[string][]gale.Values{"gender": gender, "age": age}
}

var singleJoinPort = port{
	name: "starter-single-join",
	build: func(spout func(string) func() gale.Spout) *gale.TopologyBuilder {
		return starter.SingleJoinExample(spout("gender"), spout("age"))
	},
	fields:  map[string][]string{"gender": {"id", "gender"}, "age": {"id", "age"}},
	sources: singleJoinSources(),
	last:    "join",
	result:  func(out []gale.Values) string { return sortedJoin(out, "%v/%v") },
	want:    "female/21 female/23 female/25 female/27 female/29 male/20 male/22 male/24 male/26 male/28",
}

var ports = []port{exclamationPort, wordCountPort, rollingTopWordsPort, singleJoinPort}

// sortedJoin formats each of out with format and joins them sorted.
func sortedJoin(out []gale.Values, format string) string {
	s := make([]string, len(out))
	for i, v := range out {
		s[i] = fmt.Sprintf(format, v...)
	}
	slices.Sort(s)
	return strings.Join(s, " ")
}

// complete runs p under galetest.Complete and checks its result.
func complete(t *testing.T, p port) *galetest.Result {
	t.Helper()
	topo, err := p.build(p.spoutsFor(false)).Build()
	if err != nil {
		t.Fatal(err)
	}
	res, err := galetest.Complete(context.Background(), topo, galetest.Options{Sources: p.sources, Config: p.conf, Horizon: p.horizon})
	if err != nil {
		t.Fatal(err)
	}
	if errs := res.Errors(); len(errs) > 0 {
		t.Fatalf("component errors: %v", errs)
	}
	if got := p.result(res.Emitted(p.last)); got != p.want {
		t.Errorf("%s emitted\n%s\nwant, as Storm's\n%s", p.last, got, p.want)
	}
	return res
}

// TestExclamationTopology: each word comes out of exclaim2 once, with six
// "!", and every tree is acked.
func TestExclamationTopology(t *testing.T) {
	res := complete(t, exclamationPort)
	if n := len(res.Acked("word")); n != 5 {
		t.Errorf("%d trees acked, want 5", n)
	}
}

// TestWordCountTopology: the last count of each word is how often it
// occurs in the sentences, and every sentence is acked.
func TestWordCountTopology(t *testing.T) {
	res := complete(t, wordCountPort)
	if n := len(res.Acked("spout")); n != 5 {
		t.Errorf("%d sentences acked, want 5", n)
	}
}

// TestRollingTopWords: with a 60 s horizon the ticks drive the counter and
// the rankers, and the final ranker emits rankings of the top N words by
// count, N being the user key starter.top.n, read in Prepare.
func TestRollingTopWords(t *testing.T) {
	res := complete(t, rollingTopWordsPort)
	for _, v := range res.Emitted("finalRanker") {
		if r := v[0].(*starter.Rankings); r.MaxSize != 3 {
			t.Fatalf("rankings of size %d, want starter.top.n = 3", r.MaxSize)
		}
	}
}

// TestSingleJoinExample: the join finds its sources and the id field from
// the context and emits each person's gender and age once both sides
// came; the ages without a gender are failed, when their trees time out.
func TestSingleJoinExample(t *testing.T) {
	res := complete(t, singleJoinPort)
	if n := len(res.Acked("gender")); n != 10 {
		t.Errorf("%d gender tuples acked, want 10", n)
	}
	if a, f := len(res.Acked("age")), len(res.Failed("age")); a != 10 || f != 10 {
		t.Errorf("age tuples: %d acked and %d failed, want 10 and 10", a, f)
	}
}

// TestSingleJoinBoltExpires: a tuple whose other side never comes is
// failed by the join with ErrJoinExpired after TimeoutSecs, as Storm's
// TimeCacheMap expires it, before its tree would time out.
func TestSingleJoinBoltExpires(t *testing.T) {
	b := gale.NewTopologyBuilder()
	b.SetSpout("gender", func() gale.Spout { return &galetest.FixedSpout{Fields: []string{"id", "gender"}} }, 1)
	b.SetSpout("age", func() gale.Spout { return &galetest.FixedSpout{Fields: []string{"id", "age"}} }, 1)
	b.SetBolt("join", func() gale.Bolt { return &starter.SingleJoinBolt{OutFields: []string{"gender", "age"}, TimeoutSecs: 4} }, 1).
		FieldsGrouping("gender", "id").FieldsGrouping("age", "id")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	res, err := galetest.Complete(context.Background(), topo, galetest.Options{
		Sources: map[string][]gale.Values{"gender": {{1, "male"}}, "age": {{1, 21}, {2, 22}, {3, 23}}},
		Config:  gale.Config{gale.TopologyMessageTimeoutSecs: 300},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Emitted("join"); len(got) != 1 || fmt.Sprint(got[0]) != "[male 21]" {
		t.Errorf("joined %v, want [male 21]", got)
	}
	failed := res.Failed("age")
	if len(failed) != 2 {
		t.Fatalf("age tuples failed: %v, want those of ids 2 and 3", failed)
	}
	for _, f := range failed {
		if !errors.Is(f.Reason, starter.ErrJoinExpired) {
			t.Errorf("age %v failed with %v, want ErrJoinExpired", f.MsgID, f.Reason)
		}
	}
	// Expired after 4 to 6 s (three buckets rotated every 2 s), before
	// the trees' 300 s timeout.
	if res.Elapsed >= 300*time.Second {
		t.Errorf("the topology ran %s of simulated time; the join should expire its tuples before the trees time out", res.Elapsed)
	}
}

// TestSingleJoinBoltNeedsCommonFields: sources with no field in common are
// refused in Prepare, naming them.
func TestSingleJoinBoltNeedsCommonFields(t *testing.T) {
	b := gale.NewTopologyBuilder()
	b.SetSpout("a", func() gale.Spout { return &galetest.FixedSpout{Fields: []string{"x"}} }, 1)
	b.SetSpout("b", func() gale.Spout { return &galetest.FixedSpout{Fields: []string{"y"}} }, 1)
	b.SetBolt("join", func() gale.Bolt { return starter.NewSingleJoinBolt("x", "y") }, 1).ShuffleGrouping("a").ShuffleGrouping("b")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	_, err = gale.StartLocal("no-common", nil, topo, gale.RunOptions{})
	if err == nil || !strings.Contains(err.Error(), "no field in common to join on") {
		t.Fatalf("StartLocal: %v, want the sources' missing common field named", err)
	}
}
