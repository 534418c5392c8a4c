package chaos

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// CounterValue reads, from a Prometheus text exposition, the value of the
// sample of metric whose label label is value (gale_topology_acked_total
// with topology="x"): found false if there is none, an error naming the
// line if one of the metric's lines cannot be read or two samples match.
func CounterValue(r io.Reader, metric, label, value string) (v int64, found bool, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	want := label + "=" + strconv.Quote(value)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, metric)
		if !ok || (rest != "" && rest[0] != '{' && rest[0] != ' ') {
			continue // another metric, or a longer name
		}
		labels, sample := "", strings.TrimSpace(rest)
		if strings.HasPrefix(rest, "{") {
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				return 0, false, fmt.Errorf("metrics line %d: no closing brace: %q", n, line)
			}
			labels, sample = rest[1:end], strings.TrimSpace(rest[end+1:])
		}
		if !hasLabel(labels, want) {
			continue
		}
		field, _, _ := strings.Cut(sample, " ") // a timestamp may follow
		f, err := strconv.ParseFloat(field, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, false, fmt.Errorf("metrics line %d: the value is not a number: %q", n, line)
		}
		if found {
			return 0, false, fmt.Errorf("metrics line %d: a second %s sample with %s", n, metric, want)
		}
		v, found = int64(f), true
	}
	if err := sc.Err(); err != nil {
		return 0, false, err
	}
	return v, found, nil
}

// hasLabel says whether the label set (a="1",b="2") has the pair want
// (b="2"). Label values with commas or quotes inside are compared
// whole: a pair starts at the set's start or after a comma outside quotes.
func hasLabel(labels, want string) bool {
	inQuote, escaped := false, false
	start := 0
	for i := 0; i <= len(labels); i++ {
		if i == len(labels) || (labels[i] == ',' && !inQuote) {
			if strings.TrimSpace(labels[start:i]) == want {
				return true
			}
			start = i + 1
			continue
		}
		switch c := labels[i]; {
		case escaped:
			escaped = false
		case c == '\\':
			escaped = true
		case c == '"':
			inQuote = !inQuote
		}
	}
	return false
}
