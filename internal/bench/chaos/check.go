package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Source is one place the bench reads the topology's acked count from.
type Source struct {
	Name string `json:"name"` // "list", "rest topology :all-time", "metrics", ...
	// WindowS is a rolling window's length in seconds, 0 for a total
	// since the topology began. A rolling window's count may fall once
	// the topology is older than the window, so it is checked only until
	// then.
	WindowS float64 `json:"window_s,omitempty"`
	// CheckGap: the longest time without an answer must stay within MaxGapS.
	CheckGap bool `json:"gap_checked"`
	// CheckFinal: its last value must be ≥ the acks the source counted.
	CheckFinal bool `json:"final_checked"`
	// NoValue: its answers may carry no acked figure (only answered or
	// not is recorded); a figure, if one comes, is still checked.
	NoValue bool `json:"no_value,omitempty"`
}

// Observation is one poll of a source.
type Observation struct {
	Source string  `json:"source"`
	SentS  float64 `json:"sent_s"` // since the run began
	AtS    float64 `json:"at_s"`   // when it answered or failed
	OK     bool    `json:"ok"`
	// Acked is the figure the answer carried; nil when it failed or had
	// none.
	Acked *int64 `json:"acked,omitempty"`
	// By is the nimbus that answered, where the answer says (list).
	By  string `json:"by,omitempty"`
	Err string `json:"error,omitempty"`
}

// Done is an event as it happened.
type Done struct {
	AtS  float64 `json:"at_s"`
	Kind Kind    `json:"kind"`
	// Target names what was killed: supervisor-1, nimbus-0, or a worker
	// as "worker pid 1234 of supervisor-2".
	Target string  `json:"target,omitempty"`
	PID    int     `json:"pid,omitempty"`
	DownS  float64 `json:"down_s,omitempty"`
	// RestartedAtS is when the killed supervisor or nimbus was ready
	// again; nil if it was not restarted (a worker, or an error).
	RestartedAtS *float64 `json:"restarted_at_s,omitempty"`
	// Skipped says why nothing was killed (no leader to kill, ...).
	Skipped string `json:"skipped,omitempty"`
	Err     string `json:"error,omitempty"`
}

// String is the event in a line: "leader nimbus-0 (pid 123) at 40.0 s".
func (d Done) String() string {
	if d.Skipped != "" {
		return fmt.Sprintf("%s at %.1f s: skipped, %s", d.Kind, d.AtS, d.Skipped)
	}
	s := fmt.Sprintf("%s %s", d.Kind, d.Target)
	if d.Kind == KillWorker {
		s = d.Target
	}
	if d.PID != 0 && d.Kind != KillWorker {
		s += fmt.Sprintf(" (pid %d)", d.PID)
	}
	return s + fmt.Sprintf(" at %.1f s", d.AtS)
}

// Input is what Evaluate checks.
type Input struct {
	Sources      []Source
	Observations []Observation
	Events       []Done
	// StartS and EndS bound the span over which answers are expected:
	// the first poll's sending and the last's.
	StartS, EndS float64
	// TopologyStartS is when the topology was submitted (for rolling
	// windows).
	TopologyStartS float64
	// MaxGapS is the longest time a Gap source may go without answering.
	MaxGapS float64
	// SourceAcked is the acks the queue counted; Lost the messages it
	// still held at the end, never acked.
	SourceAcked int64
	Lost        int64
}

// Decrease is a source's acked count lower than its previous answer's.
type Decrease struct {
	Source  string  `json:"source"`
	From    int64   `json:"from"`
	To      int64   `json:"to"`
	FromAtS float64 `json:"from_at_s"`
	AtS     float64 `json:"at_s"`
	// After is the last event before it, "" if none; AfterS its time.
	After  string  `json:"after,omitempty"`
	AfterS float64 `json:"after_s,omitempty"`
}

// SourceResult is what one source did over the run.
type SourceResult struct {
	Source
	Polls    int `json:"polls"`
	Answered int `json:"answered"`
	// LongestGapS is the longest time without an answer, from FromS (the
	// answer before it, or the first poll) to ToS; GapAfter is the last
	// event before its end.
	LongestGapS float64 `json:"longest_gap_s"`
	GapFromS    float64 `json:"gap_from_s"`
	GapToS      float64 `json:"gap_to_s"`
	GapAfter    string  `json:"gap_after,omitempty"`
	Decreases   int     `json:"decreases"`
	// Exempt are decreases of a rolling window older than its length:
	// not faults, not counted in Decreases.
	Exempt int `json:"exempt_decreases,omitempty"`
	// Final is its last figure, FinalAtS when it came; nil if none.
	Final    *int64  `json:"final,omitempty"`
	FinalAtS float64 `json:"final_at_s,omitempty"`
	// Errors are the distinct failures, the most frequent first (at most
	// maxErrors).
	Errors []ErrorCount `json:"errors,omitempty"`
}

// ErrorCount is a failure and how often it came.
type ErrorCount struct {
	Err   string `json:"error"`
	Count int    `json:"count"`
}

// maxErrors bounds the distinct failures kept per source.
const maxErrors = 5

// Check is one of the Done-when checks.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Result is what Evaluate found.
type Result struct {
	Sources   []SourceResult `json:"sources"`
	Decreases []Decrease     `json:"decreases"`
	Checks    []Check        `json:"checks"`
	Pass      bool           `json:"pass"`
}

// Evaluate checks the observations: per source, in the order of the answers'
// arrival, every decrease of the acked figure (a rolling window's only
// while the topology is younger than the window), the longest time
// without an answer and the last figure; then the checks: every Gap
// source answered at least every MaxGapS, no source decreased, every Final
// source ended ≥ SourceAcked, nothing was lost.
func Evaluate(in Input) Result {
	res := Result{Sources: []SourceResult{}, Decreases: []Decrease{}}
	events := slices.Clone(in.Events)
	slices.SortStableFunc(events, func(a, b Done) int { return cmp.Compare(a.AtS, b.AtS) })
	// after is the last event done at or before t.
	after := func(t float64) (string, float64) {
		i, _ := slices.BinarySearchFunc(events, t, func(d Done, t float64) int {
			if d.AtS <= t {
				return -1
			}
			return 1
		})
		if i == 0 {
			return "", 0
		}
		return events[i-1].String(), events[i-1].AtS
	}
	bySource := make(map[string][]Observation)
	for _, o := range in.Observations {
		bySource[o.Source] = append(bySource[o.Source], o)
	}
	for _, src := range in.Sources {
		obs := bySource[src.Name]
		slices.SortStableFunc(obs, func(a, b Observation) int {
			return cmp.Or(cmp.Compare(a.AtS, b.AtS), cmp.Compare(a.SentS, b.SentS))
		})
		sr := SourceResult{Source: src, Polls: len(obs)}
		errs := make(map[string]int)
		prevAns := in.StartS
		var prev *Observation
		for i := range obs {
			o := &obs[i]
			if !o.OK {
				errs[o.Err]++
				continue
			}
			sr.Answered++
			if g := o.AtS - prevAns; g > sr.LongestGapS {
				sr.LongestGapS, sr.GapFromS, sr.GapToS = g, prevAns, o.AtS
			}
			prevAns = max(prevAns, o.AtS)
			if o.Acked == nil {
				continue
			}
			if prev != nil && *o.Acked < *prev.Acked {
				if src.WindowS > 0 && o.AtS-in.TopologyStartS >= src.WindowS {
					sr.Exempt++
				} else {
					d := Decrease{Source: src.Name, From: *prev.Acked, To: *o.Acked, FromAtS: prev.AtS, AtS: o.AtS}
					d.After, d.AfterS = after(o.AtS)
					res.Decreases = append(res.Decreases, d)
					sr.Decreases++
				}
			}
			prev = o
			v := *o.Acked
			sr.Final, sr.FinalAtS = &v, o.AtS
		}
		if g := in.EndS - prevAns; g > sr.LongestGapS {
			sr.LongestGapS, sr.GapFromS, sr.GapToS = g, prevAns, in.EndS
		}
		if sr.LongestGapS > 0 {
			sr.GapAfter, _ = after(sr.GapToS)
		}
		for e, n := range errs {
			sr.Errors = append(sr.Errors, ErrorCount{Err: e, Count: n})
		}
		slices.SortFunc(sr.Errors, func(a, b ErrorCount) int { return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Err, b.Err)) })
		if len(sr.Errors) > maxErrors {
			sr.Errors = sr.Errors[:maxErrors]
		}
		res.Sources = append(res.Sources, sr)
	}
	slices.SortStableFunc(res.Decreases, func(a, b Decrease) int { return cmp.Compare(a.AtS, b.AtS) })
	res.Checks = checks(in, res.Sources)
	res.Pass = true
	for _, c := range res.Checks {
		res.Pass = res.Pass && c.OK
	}
	return res
}

func checks(in Input, srs []SourceResult) []Check {
	var cs []Check
	for _, sr := range srs {
		if !sr.CheckGap {
			continue
		}
		c := Check{Name: fmt.Sprintf("%s answers at least every %g s", sr.Name, in.MaxGapS), OK: sr.LongestGapS <= in.MaxGapS}
		c.Detail = fmt.Sprintf("%d of %d polls answered; longest gap %.2f s, from %.1f s to %.1f s", sr.Answered, sr.Polls, sr.LongestGapS, sr.GapFromS, sr.GapToS)
		if sr.GapAfter != "" {
			c.Detail += ", after " + sr.GapAfter
		}
		cs = append(cs, c)
	}
	for _, sr := range srs {
		if sr.NoValue && sr.Final == nil {
			cs = append(cs, Check{Name: sr.Name + " acked never decreases", OK: true,
				Detail: fmt.Sprintf("its answers carry no acked figure; %d of %d polls answered", sr.Answered, sr.Polls)})
			continue
		}
		c := Check{Name: sr.Name + " acked never decreases", OK: sr.Decreases == 0}
		c.Detail = fmt.Sprintf("%d decreases", sr.Decreases)
		if sr.Exempt > 0 {
			c.Detail += fmt.Sprintf(" (and %d once the topology was older than the %g s window, not counted)", sr.Exempt, sr.WindowS)
		}
		cs = append(cs, c)
	}
	for _, sr := range srs {
		if !sr.CheckFinal || (sr.NoValue && sr.Final == nil) {
			continue
		}
		name := fmt.Sprintf("%s acked ends ≥ the source's acked", sr.Name)
		switch {
		case sr.Final == nil:
			cs = append(cs, Check{Name: name, OK: false, Detail: fmt.Sprintf("no answer carried a figure; the source acked %d", in.SourceAcked)})
		case sr.WindowS > 0 && sr.FinalAtS-in.TopologyStartS >= sr.WindowS:
			cs = append(cs, Check{Name: name, OK: true, Detail: fmt.Sprintf("ends at %d, but the topology is older than the %g s window: not checked", *sr.Final, sr.WindowS)})
		default:
			cs = append(cs, Check{Name: name, OK: *sr.Final >= in.SourceAcked,
				Detail: fmt.Sprintf("ends at %d at %.1f s; the source acked %d (%+d)", *sr.Final, sr.FinalAtS, in.SourceAcked, *sr.Final-in.SourceAcked)})
		}
	}
	cs = append(cs, Check{Name: "the source lost nothing", OK: in.Lost == 0, Detail: fmt.Sprintf("%d messages never acked", in.Lost)})
	return cs
}
