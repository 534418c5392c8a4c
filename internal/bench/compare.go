package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/gale-stream/gale/internal/metrics"
)

// StatsRun is one run of a comparison, in brief.
type StatsRun struct {
	Stats                         bool    `json:"stats"`
	SentencesPerSec               float64 `json:"sentences_per_sec"`
	CPUSecondsPerMillionSentences float64 `json:"cpu_seconds_per_million_sentences"`
	LatencyP99MS                  float64 `json:"latency_p99_ms"`
}

// StatsPair is two runs back to back, one with the metrics and one
// without, and the throughput of the first over the second.
type StatsPair struct {
	On      StatsRun `json:"on"`
	Off     StatsRun `json:"off"`
	OnFirst bool     `json:"on_first"`
	Ratio   float64  `json:"ratio"` // On.SentencesPerSec / Off.SentencesPerSec
	// CPURatio is On's CPU per million sentences over Off's: the cost in
	// CPU, which a busy machine disturbs less than the throughput.
	CPURatio float64 `json:"cpu_ratio"`
}

// StatsComparison is what CompareStats measured: the pairs in the order
// run, and the medians over them.
type StatsComparison struct {
	Pairs []StatsPair `json:"pairs"`
	// MedianRatio is the median of the pairs' ratios: metrics on over
	// off, each pair run back to back so that the machine's load is
	// about the same for both.
	MedianRatio float64 `json:"median_ratio"`
	// MedianCPURatio is the median of the pairs' CPU ratios.
	MedianCPURatio float64 `json:"median_cpu_ratio"`
	// The medians of the runs' throughput and CPU per million sentences.
	MedianOnPerSec  float64 `json:"median_on_sentences_per_sec"`
	MedianOffPerSec float64 `json:"median_off_sentences_per_sec"`
	MedianOnCPU     float64 `json:"median_on_cpu_seconds_per_million_sentences"`
	MedianOffCPU    float64 `json:"median_off_cpu_seconds_per_million_sentences"`
	Error           string  `json:"error,omitempty"`
}

// CompareStats measures what the per-component metrics cost: pairs pairs
// of runs of opts, one with topology.stats.enabled true and one with it
// false, in ABBA order (on then off, off then on, …) so that a drift in
// the machine's load does not favour either. Each run is a Run of opts
// (opts.StatsOff is ignored) whose own report is not written; live, if
// not nil, gets a line per run. It writes the comparison to out, as
// JSON with opts.JSON, and returns it; on a failed run it stops there and
// writes and returns what it has, with the error.
func CompareStats(ctx context.Context, opts Options, topo Runner, pairs int, out, live io.Writer) (*StatsComparison, error) {
	if pairs < 1 {
		return nil, fmt.Errorf("--compare-stats must be ≥ 1 pairs of runs, got %d", pairs)
	}
	if opts.Runner != RunnerGale {
		return nil, fmt.Errorf("--compare-stats applies to the gale runner only, got --runner %s", opts.Runner)
	}
	c := &StatsComparison{}
	var err error
	run := func(on bool, i int) (StatsRun, error) {
		o := opts
		o.StatsOff = !on
		o.JSON = true
		r, err := Run(ctx, o, topo, io.Discard, nil)
		if err != nil {
			return StatsRun{}, fmt.Errorf("pair %d, metrics %s: %w", i+1, onOff(on), err)
		}
		s := StatsRun{Stats: on, SentencesPerSec: r.SentencesPerSec, CPUSecondsPerMillionSentences: r.CPUSecondsPerMillionSentences}
		if r.LatencyMS != nil {
			s.LatencyP99MS = r.LatencyMS.P99
		}
		if live != nil {
			fmt.Fprintf(live, "pair %d/%d, metrics %-3s  %s sentences/s  %.3f CPU s per million  p99 %s\n",
				i+1, pairs, onOff(on), Commas(int64(s.SentencesPerSec)), s.CPUSecondsPerMillionSentences, fmtMS(s.LatencyP99MS))
		}
		return s, nil
	}
	for i := 0; i < pairs && err == nil; i++ {
		p := StatsPair{OnFirst: i%2 == 0}
		first, second := &p.On, &p.Off
		if !p.OnFirst {
			first, second = second, first
		}
		if *first, err = run(p.OnFirst, i); err != nil {
			break
		}
		if *second, err = run(!p.OnFirst, i); err != nil {
			break
		}
		if p.Off.SentencesPerSec > 0 {
			p.Ratio = p.On.SentencesPerSec / p.Off.SentencesPerSec
		}
		if p.Off.CPUSecondsPerMillionSentences > 0 {
			p.CPURatio = p.On.CPUSecondsPerMillionSentences / p.Off.CPUSecondsPerMillionSentences
		}
		c.Pairs = append(c.Pairs, p)
	}
	c.summarise()
	if err != nil {
		c.Error = err.Error()
	}
	var werr error
	if opts.JSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		werr = enc.Encode(c)
	} else {
		werr = c.WriteTable(out)
	}
	return c, errors.Join(err, werr)
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

func (c *StatsComparison) summarise() {
	var ratios, cpuRatios, on, off, onCPU, offCPU []float64
	for _, p := range c.Pairs {
		ratios, cpuRatios = append(ratios, p.Ratio), append(cpuRatios, p.CPURatio)
		on, off = append(on, p.On.SentencesPerSec), append(off, p.Off.SentencesPerSec)
		onCPU, offCPU = append(onCPU, p.On.CPUSecondsPerMillionSentences), append(offCPU, p.Off.CPUSecondsPerMillionSentences)
	}
	c.MedianRatio, c.MedianCPURatio = metrics.Median(ratios), metrics.Median(cpuRatios)
	c.MedianOnPerSec, c.MedianOffPerSec = metrics.Median(on), metrics.Median(off)
	c.MedianOnCPU, c.MedianOffCPU = metrics.Median(onCPU), metrics.Median(offCPU)
}

// WriteTable writes c as a table: a row per pair, then the medians.
func (c *StatsComparison) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if c.Error != "" {
		fmt.Fprintf(tw, "error\t%s\n", c.Error)
	}
	fmt.Fprintf(tw, "pair\torder\ton sentences/s\toff sentences/s\ton/off\ton CPU s/M\toff CPU s/M\ton/off\n")
	for i, p := range c.Pairs {
		order := "on, off"
		if !p.OnFirst {
			order = "off, on"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%.3f\t%.3f\t%.3f\t%.3f\n", i+1, order,
			Commas(int64(p.On.SentencesPerSec)), Commas(int64(p.Off.SentencesPerSec)), p.Ratio,
			p.On.CPUSecondsPerMillionSentences, p.Off.CPUSecondsPerMillionSentences, p.CPURatio)
	}
	fmt.Fprintf(tw, "median\t\t%s\t%s\t%.3f\t%.3f\t%.3f\t%.3f\n",
		Commas(int64(c.MedianOnPerSec)), Commas(int64(c.MedianOffPerSec)), c.MedianRatio, c.MedianOnCPU, c.MedianOffCPU, c.MedianCPURatio)
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write comparison: %w", err)
	}
	return nil
}
