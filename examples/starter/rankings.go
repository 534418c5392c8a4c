package starter

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"github.com/gale-stream/gale"
)

// Rankable is an object with a count, as storm-starter's
// RankableObjectWithFields: Obj is what is ranked (equal objects are the
// same entry), Count its rank, and Fields the input's other values.
type Rankable struct {
	Obj    any   `json:"obj"`
	Count  int64 `json:"count"`
	Fields []any `json:"fields,omitempty"`
}

// RankableFrom makes a Rankable of a tuple of obj, count and other fields,
// as RankableObjectWithFields.from.
func RankableFrom(t *gale.Tuple) (Rankable, error) {
	v := t.Values()
	if len(v) < 2 {
		return Rankable{}, fmt.Errorf("a rankable needs an object and a count, got %v", v)
	}
	n, ok := toInt64(v[1])
	if !ok {
		return Rankable{}, fmt.Errorf("count %v (%T) of %v is not an integer", v[1], v[1], v[0])
	}
	return Rankable{Obj: v[0], Count: n, Fields: slices.Clone(v[2:])}, nil
}

// Rankings keeps the top MaxSize Rankables by count, highest first, as
// storm-starter's Rankings. It travels between workers as the registered
// type "starter.Rankings" (RegisterRankings).
type Rankings struct {
	MaxSize int        `json:"max_size"`
	Items   []Rankable `json:"items"`
}

// NewRankings returns empty rankings of at most maxSize entries.
func NewRankings(maxSize int) *Rankings { return &Rankings{MaxSize: maxSize} }

// Size is the number of entries.
func (r *Rankings) Size() int { return len(r.Items) }

// UpdateWith adds r2, or replaces the entry of an equal object, then
// reranks and drops the entries beyond MaxSize.
func (r *Rankings) UpdateWith(r2 Rankable) {
	if i := slices.IndexFunc(r.Items, func(x Rankable) bool { return x.Obj == r2.Obj }); i >= 0 {
		r.Items[i] = r2
	} else {
		r.Items = append(r.Items, r2)
	}
	// Stable, so equal counts keep their order, as Storm's Collections.sort.
	slices.SortStableFunc(r.Items, func(a, b Rankable) int {
		switch {
		case a.Count > b.Count:
			return -1
		case a.Count < b.Count:
			return 1
		}
		return 0
	})
	if len(r.Items) > r.MaxSize {
		r.Items = r.Items[:r.MaxSize]
	}
}

// Merge updates the rankings with each entry of other.
func (r *Rankings) Merge(other *Rankings) {
	for _, x := range other.Items {
		r.UpdateWith(x)
	}
}

// PruneZeroCounts drops the entries whose count is 0.
func (r *Rankings) PruneZeroCounts() {
	r.Items = slices.DeleteFunc(r.Items, func(x Rankable) bool { return x.Count == 0 })
}

// Copy returns a deep enough copy to emit: later updates do not change it.
func (r *Rankings) Copy() *Rankings {
	c := &Rankings{MaxSize: r.MaxSize, Items: make([]Rankable, len(r.Items))}
	for i, x := range r.Items {
		x.Fields = slices.Clone(x.Fields)
		c.Items[i] = x
	}
	return c
}

type rankingsCodec struct{}

func (rankingsCodec) Append(dst []byte, v any) ([]byte, error) {
	b, err := json.Marshal(v.(*Rankings))
	return append(dst, b...), err
}

func (rankingsCodec) Decode(b []byte) (any, error) {
	r := &Rankings{}
	if err := json.Unmarshal(b, r); err != nil {
		return nil, fmt.Errorf("starter.Rankings: %w", err)
	}
	for i := range r.Items { // JSON numbers come back as float64
		if f, ok := r.Items[i].Obj.(float64); ok && f == float64(int64(f)) {
			r.Items[i].Obj = int64(f)
		}
	}
	return r, nil
}

// RegisterRankings registers *Rankings with b, so that rankings can go to
// a task in another worker. Objects ranked are best strings (they travel
// as JSON).
func RegisterRankings(b *gale.TopologyBuilder) {
	b.RegisterType(reflect.TypeOf(&Rankings{}), "starter.Rankings", rankingsCodec{})
}

// TopNKey is the user config key that sets the rankers' N when their TopN
// is 0 (an integer; default 10, as Storm's DEFAULT_COUNT).
const TopNKey = "starter.top.n"

const (
	defaultTopN               = 10
	defaultRankerEmitFreqSecs = 2
)

// rankerBolt is storm-starter's AbstractRankerBolt: it keeps rankings of
// its input (update) and emits a copy of them on each tick, every
// EmitFrequencySecs (default 2), on field rankings.
type rankerBolt struct {
	gale.BaseBasicBolt
	// TopN is the rankings' size; 0 reads TopNKey from the topology
	// config, and failing that 10.
	TopN int
	// EmitFrequencySecs is the tick frequency; default 2.
	EmitFrequencySecs int

	rankings *Rankings
}

// DeclareOutputFields declares rankings.
func (*rankerBolt) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("rankings") }

// ComponentConfiguration sets the bolt's tick frequency, as Storm's.
func (b *rankerBolt) ComponentConfiguration() gale.Config {
	f := b.EmitFrequencySecs
	if f <= 0 {
		f = defaultRankerEmitFreqSecs
	}
	return gale.Config{gale.TopologyTickTupleFreqSecs: f}
}

// Prepare sizes the rankings: TopN, else the topology's starter.top.n.
func (b *rankerBolt) Prepare(tc *gale.TopologyContext) error {
	n := b.TopN
	if n <= 0 {
		n = defaultTopN
		if v, ok := tc.Config().Lookup(TopNKey); ok {
			got, ok := toInt64(v)
			if !ok || got <= 0 {
				return fmt.Errorf("%s is %v (%T); want a positive integer", TopNKey, v, v)
			}
			n = int(got)
		}
	}
	b.rankings = NewRankings(n)
	return nil
}

func (b *rankerBolt) execute(t *gale.Tuple, c *gale.BasicCollector, update func(*gale.Tuple) error) error {
	if t.IsTick() {
		_, err := c.Emit(b.rankings.Copy())
		return err
	}
	return update(t)
}

// IntermediateRankingsBolt ranks the (obj, count) tuples it gets, as
// storm-starter's: subscribed by fields on obj, each task ranks its share.
type IntermediateRankingsBolt struct{ rankerBolt }

// NewIntermediateRankingsBolt returns a ranker of the top n (0: TopNKey)
// emitting every emitSecs (0: 2).
func NewIntermediateRankingsBolt(n, emitSecs int) *IntermediateRankingsBolt {
	return &IntermediateRankingsBolt{rankerBolt{TopN: n, EmitFrequencySecs: emitSecs}}
}

// Execute ranks the input or, on a tick, emits the rankings.
func (b *IntermediateRankingsBolt) Execute(t *gale.Tuple, c *gale.BasicCollector) error {
	return b.execute(t, c, func(t *gale.Tuple) error {
		r, err := RankableFrom(t)
		if err != nil {
			return err
		}
		b.rankings.UpdateWith(r)
		return nil
	})
}

// TotalRankingsBolt merges the rankings it gets into total rankings, as
// storm-starter's: subscribed with global grouping to the intermediate
// rankers.
type TotalRankingsBolt struct{ rankerBolt }

// NewTotalRankingsBolt returns a merger of the top n (0: TopNKey)
// emitting every emitSecs (0: 2).
func NewTotalRankingsBolt(n, emitSecs int) *TotalRankingsBolt {
	return &TotalRankingsBolt{rankerBolt{TopN: n, EmitFrequencySecs: emitSecs}}
}

// Execute merges the input's rankings or, on a tick, emits the total.
func (b *TotalRankingsBolt) Execute(t *gale.Tuple, c *gale.BasicCollector) error {
	return b.execute(t, c, func(t *gale.Tuple) error {
		other, ok := t.Value(0).(*Rankings)
		if !ok {
			return fmt.Errorf("input %v is not *starter.Rankings", t.Value(0))
		}
		b.rankings.Merge(other)
		b.rankings.PruneZeroCounts()
		return nil
	})
}

// RollingTopWords wires storm-starter's RollingTopWords: the spout
// "wordGenerator" (words on field word) to "counter", a RollingCountBolt
// over 9 s emitting every 3 s (fields grouping on word), to
// "intermediateRanker" (fields on obj) to "finalRanker" (global), the
// rankers of the top topN (0: the topology's starter.top.n).
func RollingTopWords(words func() gale.Spout, topN int) *gale.TopologyBuilder {
	b := gale.NewTopologyBuilder()
	RegisterRankings(b)
	b.SetSpout("wordGenerator", words, 5)
	b.SetBolt("counter", func() gale.Bolt { return NewRollingCountBolt(9, 3) }, 4).FieldsGrouping("wordGenerator", "word")
	b.SetBasicBolt("intermediateRanker", func() gale.BasicBolt { return NewIntermediateRankingsBolt(topN, 0) }, 4).FieldsGrouping("counter", "obj")
	b.SetBasicBolt("finalRanker", func() gale.BasicBolt { return NewTotalRankingsBolt(topN, 0) }, 1).GlobalGrouping("intermediateRanker")
	return b
}

func toInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case uint32:
		return int64(n), true
	case float64:
		if n == float64(int64(n)) {
			return int64(n), true
		}
	}
	return 0, false
}
