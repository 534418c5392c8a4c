package failover

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/examples/wordcount"
)

// TopologyName is the name the failover bench submits its topology
// under, and the one worker processes rebuild it by.
const TopologyName = "bench-failover"

// Build builds the failover bench's word count: Spouts spouts taking
// sentences from the queue at parameter queue (HOST:PORT, required),
// Splitters split bolts (shuffle grouping) and Counters count bolts
// (fields grouping on the word). Parameters spouts, splitters, counters
// and prefetch (the messages each spout takes ahead) are whole numbers
// ≥ 1. The config it returns asks for nothing: the bench sets workers,
// ackers and timeouts at submit.
func Build(params map[string]string) (*gale.Topology, gale.Config, error) {
	ints := map[string]int{"spouts": 1, "splitters": 1, "counters": 1, "prefetch": 16}
	known := append(slices.Sorted(maps.Keys(ints)), "queue")
	slices.Sort(known)
	var errs []error
	addr, ok := params["queue"]
	if !ok {
		errs = append(errs, errors.New("parameter queue: the queue's HOST:PORT is required"))
	} else if err := checkAddr(addr); err != nil {
		errs = append(errs, err)
	}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if k == "queue" {
			continue
		}
		if _, ok := ints[k]; !ok {
			errs = append(errs, fmt.Errorf("unknown parameter %q (%s takes %s)", k, TopologyName, strings.Join(known, ", ")))
			continue
		}
		n, err := strconv.Atoi(params[k])
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("parameter %s: want a whole number ≥ 1, got %q", k, params[k]))
			continue
		}
		ints[k] = n
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	b := gale.NewTopologyBuilder()
	b.SetSpout("sentences", func() gale.Spout { return &Spout{Addr: addr, Prefetch: ints["prefetch"]} }, ints["spouts"])
	b.SetBolt("split", func() gale.Bolt { return &wordcount.SplitSentence{} }, ints["splitters"]).ShuffleGrouping("sentences")
	b.SetBasicBolt("count", func() gale.BasicBolt { return &wordcount.WordCount{} }, ints["counters"]).FieldsGrouping("split", "word")
	topo, err := b.Build()
	return topo, nil, err
}
