package chaos

import (
	"fmt"
	"io"
	"strconv"
)

// Report is what `gale bench chaos` prints; --json prints it as is.
type Report struct {
	Seed        uint64  `json:"seed"`
	DurationS   float64 `json:"duration_s"`
	PeriodS     float64 `json:"period_s"`
	WarmupS     float64 `json:"warmup_s"`
	Nimbuses    int     `json:"nimbuses"`
	Supervisors int     `json:"supervisors"`
	Workers     int     `json:"workers"`
	Rate        float64 `json:"rate"`
	MaxGapS     float64 `json:"max_list_gap_s"`

	// Planned are the events the paper gave, Events those done.
	Planned []PlannedEvent `json:"planned"`
	Events  []Done         `json:"events"`

	Result

	// The queue's counts: the source of truth.
	Produced   int64 `json:"produced"`
	Acked      int64 `json:"acked"`
	Failed     int64 `json:"failed"`
	Replayed   int64 `json:"replayed"`
	Duplicates int64 `json:"duplicates"`
	Lost       int64 `json:"lost"`

	Observations []Observation `json:"observations"`
	Error        string        `json:"error,omitempty"`
}

// PlannedEvent is an Event in the report's units.
type PlannedEvent struct {
	AtS   float64 `json:"at_s"`
	Kind  Kind    `json:"kind"`
	Pick  uint64  `json:"pick"`
	DownS float64 `json:"down_s,omitempty"`
}

// Planned converts a schedule for the report.
func Planned(evs []Event) []PlannedEvent {
	out := make([]PlannedEvent, len(evs))
	for i, e := range evs {
		out[i] = PlannedEvent{AtS: e.At.Seconds(), Kind: e.Kind, Pick: e.Pick, DownS: e.Down.Seconds()}
	}
	return out
}

// maxPrinted bounds the decreases Print lists one per line.
const maxPrinted = 20

// Print writes the human summary: the run, the events, each source's
// answers and last figure, the decreases, the checks and the verdict.
// name is the program's ("gale").
func (r *Report) Print(w io.Writer, name string) error {
	fmt.Fprintf(w, "%s bench chaos: seed %d (--seed %d replays the schedule), %s of chaos after a %s warm-up, an event every %s\n",
		name, r.Seed, r.Seed, secs(r.DurationS), secs(r.WarmupS), secs(r.PeriodS))
	fmt.Fprintf(w, "%d nimbuses, %d supervisors, %d workers, %s sentences/s in ack mode from the bench's queue\n\n",
		r.Nimbuses, r.Supervisors, r.Workers, strconv.FormatFloat(r.Rate, 'f', -1, 64))
	var n [3]int
	for _, e := range r.Events {
		if e.Skipped != "" {
			continue
		}
		for i, k := range Kinds {
			if e.Kind == k {
				n[i]++
			}
		}
	}
	fmt.Fprintf(w, "events: %d done of %d planned: %d workers, %d supervisors, %d leaders kill -9'd\n", n[0]+n[1]+n[2], len(r.Planned), n[0], n[1], n[2])
	for _, e := range r.Events {
		line := "  " + e.String()
		if e.RestartedAtS != nil {
			line += fmt.Sprintf(", down %.1f s, ready again at %.1f s", e.DownS, *e.RestartedAtS)
		}
		if e.Err != "" {
			line += ": error: " + e.Err
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "\n%-28s %9s %11s %8s %10s %14s\n", "source", "answered", "longest gap", "decreases", "final", "vs source")
	for _, s := range r.Sources {
		final, vs := "-", ""
		if s.Final != nil {
			final = strconv.FormatInt(*s.Final, 10)
			vs = fmt.Sprintf("%+d", *s.Final-r.Acked)
		}
		fmt.Fprintf(w, "%-28s %4d/%-4d %9.2f s %8d %10s %14s\n", s.Name, s.Answered, s.Polls, s.LongestGapS, s.Decreases, final, vs)
	}
	for _, s := range r.Sources {
		for _, e := range s.Errors {
			fmt.Fprintf(w, "  %s failed %d× with: %s\n", s.Name, e.Count, e.Err)
		}
	}
	if len(r.Decreases) > 0 {
		fmt.Fprintf(w, "\ndecreases (%d):\n", len(r.Decreases))
		for i, d := range r.Decreases {
			if i == maxPrinted {
				fmt.Fprintf(w, "  ... and %d more (--json lists them all)\n", len(r.Decreases)-maxPrinted)
				break
			}
			after := "before any event"
			if d.After != "" {
				after = fmt.Sprintf("%.1f s after %s", d.AtS-d.AfterS, d.After)
			}
			fmt.Fprintf(w, "  %-26s %10d → %-10d at %6.1f s (%s)\n", d.Source, d.From, d.To, d.AtS, after)
		}
	}
	fmt.Fprintf(w, "\nthe queue: produced %d, acked %d, failed %d, replayed %d, duplicates %d, lost %d\n\n",
		r.Produced, r.Acked, r.Failed, r.Replayed, r.Duplicates, r.Lost)
	for _, c := range r.Checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "%s %s: %s\n", mark, c.Name, c.Detail)
	}
	if r.Error != "" {
		fmt.Fprintf(w, "error: %s\n", r.Error)
	}
	verdict := "PASS"
	if !r.Pass || r.Error != "" {
		verdict = "FAIL"
	}
	_, err := fmt.Fprintf(w, "%s\n", verdict)
	return err
}

func secs(s float64) string { return strconv.FormatFloat(s, 'f', -1, 64) + " s" }
