package wordcount

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/bench"
)

// Build builds the bench's word count for `gale run bench-wordcount`, the
// bench's workload without its measurements. Parameters, each optional:
// mode (ack or noack), rate (sentences per second over all spouts, 0 = as
// fast as they go), spouts, splitters, counters, ackers and
// max-spout-pending; the defaults are `gale bench wordcount`'s.
func Build(params map[string]string) (*gale.Topology, gale.Config, error) {
	opts := bench.DefaultOptions()
	ints := map[string]*int{
		"spouts": &opts.Spouts, "splitters": &opts.Splitters, "counters": &opts.Counters,
		"ackers": &opts.Ackers, "max-spout-pending": &opts.MaxSpoutPending,
	}
	known := []string{"mode", "rate"}
	known = append(known, slices.Collect(maps.Keys(ints))...)
	slices.Sort(known)
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(params)) {
		v := params[k]
		switch p := ints[k]; {
		case k == "mode":
			if v != bench.ModeAck && v != bench.ModeNoAck {
				errs = append(errs, fmt.Errorf("parameter mode: want %q or %q, got %q", bench.ModeAck, bench.ModeNoAck, v))
			}
			opts.Mode = v
		case k == "rate":
			r, err := strconv.ParseFloat(v, 64)
			if err != nil || r < 0 {
				errs = append(errs, fmt.Errorf("parameter rate: want sentences per second ≥ 0, got %q", v))
			}
			opts.Rate = r
		case p != nil:
			n, err := strconv.Atoi(v)
			least := 1
			if k == "ackers" || k == "max-spout-pending" {
				least = 0
			}
			if err != nil || n < least {
				errs = append(errs, fmt.Errorf("parameter %s: want a whole number ≥ %d, got %q", k, least, v))
			}
			*p = n
		default:
			errs = append(errs, fmt.Errorf("unknown parameter %q (bench-wordcount takes %s)", k, strings.Join(known, ", ")))
		}
	}
	if opts.Mode == bench.ModeAck && opts.Ackers == 0 {
		errs = append(errs, errors.New("parameter ackers: ack mode needs at least 1"))
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	return Topology(opts, new(bench.Stats))
}
