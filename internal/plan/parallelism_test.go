package plan

import (
	"errors"
	"strings"
	"testing"
)

func TestWithParallelism(t *testing.T) {
	base := Topology{Components: []Component{
		{ID: "s", Spout: true, Tasks: 2, Parallelism: 2, Streams: []string{"default"}},
		{ID: "b", Tasks: 8, Parallelism: 2, MaxTaskParallelism: 6, Inputs: []Input{{Component: "s", Stream: "default"}}},
	}}
	t.Run("applied", func(t *testing.T) {
		got, err := base.WithParallelism(map[string]int{"b": 6, "s": 1})
		if err != nil {
			t.Fatal(err)
		}
		p, err := New(got)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := p.Component("b"); b.Executors != 6 || b.Tasks != 6 {
			t.Errorf("b: %d executors over %d tasks, want 6 over 6", b.Executors, b.Tasks)
		}
		if s, _ := p.Component("s"); s.Executors != 1 || s.Tasks != 2 {
			t.Errorf("s: %d executors over %d tasks, want 1 over 2", s.Executors, s.Tasks)
		}
		if base.Components[1].Parallelism != 2 || base.Components[0].Parallelism != 2 {
			t.Errorf("the input changed: %+v", base.Components)
		}
	})
	for _, tc := range []struct {
		name string
		p    map[string]int
		want string
	}{
		{"zero", map[string]int{"b": 0}, `b=0: component "b" has 6 tasks, so it runs 1 to 6`},
		{"over the capped tasks", map[string]int{"b": 7}, `b=7: component "b" has 6 tasks`},
		{"over the tasks", map[string]int{"s": 3}, `s=3: component "s" has 2 tasks`},
		{"unknown", map[string]int{"nope": 1, "s": 1}, `nope=1: the topology has no component "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := base.WithParallelism(tc.p)
			if !errors.Is(err, ErrParallelism) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrParallelism saying %q", err, tc.want)
			}
		})
	}
}
