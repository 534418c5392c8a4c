package config

import (
	"encoding/json"
	"errors"
	"maps"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/goccy/go-yaml"
)

// TestConfigIntMap: a mapping of names to integers, such as
// isolation.scheduler.machines, as YAML, JSON and Go give it.
func TestConfigIntMap(t *testing.T) {
	tests := []struct {
		name    string
		raw     any
		want    map[string]int
		wantIs  error
		wantMsg string // the whole message, when wantIs is set
	}{
		{"YAML", map[string]any{"wordcount": uint64(2), "billing": uint64(1)}, map[string]int{"wordcount": 2, "billing": 1}, nil, ""},
		{"JSON", map[string]any{"wordcount": float64(2)}, map[string]int{"wordcount": 2}, nil, ""},
		{"JSON UseNumber", map[string]any{"wordcount": json.Number("2")}, map[string]int{"wordcount": 2}, nil, ""},
		{"Go map", map[string]int{"wordcount": 3}, map[string]int{"wordcount": 3}, nil, ""},
		{"Go map of interface keys", map[any]any{"wordcount": 3}, map[string]int{"wordcount": 3}, nil, ""},
		{"empty", map[string]any{}, map[string]int{}, nil, ""},

		{"string value", map[string]any{"billing": 1, "wordcount": "two"}, nil, ErrWrongType,
			`config: "isolation.scheduler.machines" in gale.yaml must be a mapping of names to integers, got string "two" for "wordcount"`},
		{"fractional JSON number", map[string]any{"wordcount": 1.5}, nil, ErrWrongType,
			`config: "isolation.scheduler.machines" in gale.yaml must be a mapping of names to integers, got number 1.5 for "wordcount"`},
		{"null value", map[string]any{"wordcount": nil}, nil, ErrWrongType,
			`config: "isolation.scheduler.machines" in gale.yaml must be a mapping of names to integers, got null for "wordcount"`},
		{"first bad entry by name", map[string]any{"b": "x", "a": true}, nil, ErrWrongType,
			`config: "isolation.scheduler.machines" in gale.yaml must be a mapping of names to integers, got boolean true for "a"`},
		{"integer key", map[any]any{1: 2}, nil, ErrWrongType,
			`config: "isolation.scheduler.machines" in gale.yaml must be a mapping of names to integers, got the key integer 1 (a name is a string)`},
		{"beyond 64 bits", map[string]any{"wordcount": uint64(math.MaxUint64)}, nil, ErrOutOfRange,
			`config: "isolation.scheduler.machines" in gale.yaml must be a mapping of names to integers that fit in 64 bits, got integer 18446744073709551615 for "wordcount"`},
		{"zero machines", map[string]any{"billing": 1, "wordcount": 0}, nil, ErrOutOfRange,
			`config: "isolation.scheduler.machines" in gale.yaml must map names to integers ≥ 1, got 0 for "wordcount"`},
		{"negative machines", map[string]any{"wordcount": float64(-1)}, nil, ErrOutOfRange,
			`config: "isolation.scheduler.machines" in gale.yaml must map names to integers ≥ 1, got -1 for "wordcount"`},
		{"scalar", "wordcount", nil, ErrWrongType,
			`config: "isolation.scheduler.machines" in gale.yaml must be a mapping of names to integers, got string "wordcount"`},
		{"list", []any{"wordcount", 2}, nil, ErrWrongType,
			`config: "isolation.scheduler.machines" in gale.yaml must be a mapping of names to integers, got a list`},
		{"null", nil, nil, ErrWrongType,
			`config: "isolation.scheduler.machines" in gale.yaml must be a mapping of names to integers, got null (remove the key to keep the default {})`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Resolve(Config{IsolationSchedulerMachines: tt.raw}, nil)
			if tt.wantIs != nil {
				if err == nil {
					t.Fatalf("got %v, nil error, want %q", e.IntMap(IsolationSchedulerMachines), tt.wantMsg)
				}
				if got := err.Error(); got != tt.wantMsg {
					t.Errorf("message:\n got  %s\n want %s", got, tt.wantMsg)
				}
				if !errors.Is(err, tt.wantIs) {
					t.Errorf("errors.Is(err, %v): got false, want true", tt.wantIs)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want nil", err)
			}
			got := e.IntMap(IsolationSchedulerMachines)
			if got == nil || !maps.Equal(got, tt.want) {
				t.Errorf("IntMap: got %#v, want %#v", got, tt.want)
			}
			if src := e.Source(IsolationSchedulerMachines); src != LayerFile {
				t.Errorf("Source: got %v, want %v", src, LayerFile)
			}
		})
	}
}

func TestIsolationSchedulerMachinesIsAClusterKey(t *testing.T) {
	e, err := Resolve(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.IntMap(IsolationSchedulerMachines); got == nil || len(got) != 0 {
		t.Errorf("default: got %#v, want an empty mapping", got)
	}
	iso := Config{IsolationSchedulerMachines: map[string]any{"wordcount": 2}}
	for _, tt := range []struct {
		layer Layer
		want  string
	}{
		{LayerTopology, `config: "isolation.scheduler.machines" may not be set in topology config (only topology.* keys may; set it in gale.yaml)`},
		{LayerComponent, `config: "isolation.scheduler.machines" may not be set in component config (allowed: topology.component.panic.policy, topology.debug, topology.max.spout.pending, topology.max.spout.pending.autotune, topology.max.spout.pending.autotune.interval.secs, topology.max.task.parallelism, topology.tick.tuple.freq.secs, topology.tuple.reuse; set it in gale.yaml)`},
	} {
		err := Validate(iso, tt.layer)
		if err == nil || err.Error() != tt.want || !errors.Is(err, ErrForbiddenOverride) {
			t.Errorf("in %v: got %v, want ErrForbiddenOverride %s", tt.layer, err, tt.want)
		}
	}
	if err := Validate(iso, LayerFile); err != nil {
		t.Errorf("in gale.yaml: got %v, want nil", err)
	}
}

// TestEffectiveIntMapIsACopy: neither IntMap's result, Map's nor the
// Config given to Resolve shares its map with the Effective.
func TestEffectiveIntMapIsACopy(t *testing.T) {
	file := Config{IsolationSchedulerMachines: map[string]int{"wordcount": 2}}
	e, err := Resolve(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	file[IsolationSchedulerMachines].(map[string]int)["wordcount"] = 9
	e.IntMap(IsolationSchedulerMachines)["wordcount"] = 8
	e.Map()[IsolationSchedulerMachines].(map[string]int)["wordcount"] = 7
	for _, en := range e.Entries() {
		if en.Key == IsolationSchedulerMachines {
			en.Value.(map[string]int)["wordcount"] = 6
		}
	}
	if got := e.IntMap(IsolationSchedulerMachines); !maps.Equal(got, map[string]int{"wordcount": 2}) {
		t.Errorf("after the callers changed their maps: got %v, want map[wordcount:2]", got)
	}
	// Map's result is a valid gale.yaml, and gives the same mapping back.
	again, err := Resolve(e.Map(), nil)
	if err != nil {
		t.Fatalf("Resolve(Map()): %v", err)
	}
	if got := again.IntMap(IsolationSchedulerMachines); !maps.Equal(got, map[string]int{"wordcount": 2}) {
		t.Errorf("round trip: got %v, want map[wordcount:2]", got)
	}
}

// TestConfigIntMapFromDecoders: the mapping as LoadFile, goccy's
// YAML and encoding/json decode it.
func TestConfigIntMapFromDecoders(t *testing.T) {
	want := map[string]int{"wordcount": 2, "billing": 1, "123": 4}
	dir := t.TempDir()
	path := filepath.Join(dir, "gale.yaml")
	const doc = "isolation.scheduler.machines:\n  wordcount: 2\n  billing: 0x1\n  123: 4\n"
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	decode := map[string]func() (Config, error){
		"LoadFile": func() (Config, error) { return LoadFile(path) },
		"goccy/go-yaml flow style": func() (Config, error) {
			var c Config
			err := yaml.Unmarshal([]byte("isolation.scheduler.machines: {wordcount: 2, billing: 1, 123: 4}\n"), &c)
			return c, err
		},
		"encoding/json": func() (Config, error) {
			var c Config
			err := json.Unmarshal([]byte(`{"isolation.scheduler.machines": {"wordcount": 2, "billing": 1.0, "123": 4e0}}`), &c)
			return c, err
		},
	}
	for name, fn := range decode {
		t.Run(name, func(t *testing.T) {
			c, err := fn()
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			e, err := Resolve(c, nil)
			if err != nil {
				t.Fatalf("Resolve: got error %v, want nil", err)
			}
			if got := e.IntMap(IsolationSchedulerMachines); !maps.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}

	t.Run("a number beyond 64 bits in the mapping is out of range", func(t *testing.T) {
		big := filepath.Join(dir, "big.yaml")
		if err := os.WriteFile(big, []byte("isolation.scheduler.machines:\n  wordcount: 99999999999999999999\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := LoadFile(big)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Resolve(c, nil)
		const want = `config: "isolation.scheduler.machines" in gale.yaml must be a mapping of names to integers that fit in 64 bits, got number 99999999999999999999 for "wordcount"`
		if err == nil || err.Error() != want || !errors.Is(err, ErrOutOfRange) {
			t.Errorf("got %v, want ErrOutOfRange %s", err, want)
		}
	})
}

func TestFormatIntMap(t *testing.T) {
	for _, tt := range []struct {
		m    map[string]int
		want string
	}{
		{map[string]int{}, "{}"},
		{map[string]int{"wordcount": 2, "billing": 1}, "{billing: 1, wordcount: 2}"},
	} {
		if got := formatIntMap(tt.m); got != tt.want {
			t.Errorf("formatIntMap(%v): got %q, want %q", tt.m, got, tt.want)
		}
	}
}
