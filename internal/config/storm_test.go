package config

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestStormKeysDocumented: docs/storm-keys.md gives every key of the
// code's Storm table (stormKeys) with the same status and note, and no
// other, so that the two cannot drift.
func TestStormKeysDocumented(t *testing.T) {
	data, err := os.ReadFile("../../docs/storm-keys.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([^`]+)` \\| ([^|]+?) \\| (.*?) ?\\|$")
	doc := map[string][2]string{}
	for _, line := range strings.Split(string(data), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if _, dup := doc[m[1]]; dup {
			t.Errorf("docs/storm-keys.md lists %s twice", m[1])
		}
		doc[m[1]] = [2]string{m[2], strings.TrimSpace(m[3])}
	}
	code := map[string]bool{}
	for _, k := range stormKeys {
		if code[k.name] {
			t.Errorf("stormKeys lists %s twice", k.name)
		}
		code[k.name] = true
		d, ok := doc[k.name]
		switch {
		case !ok:
			t.Errorf("docs/storm-keys.md does not list %s (%s in stormKeys)", k.name, k.status)
		case d[0] != k.status.String():
			t.Errorf("docs/storm-keys.md gives %s as %q, stormKeys as %q", k.name, d[0], k.status)
		case d[1] != k.note:
			t.Errorf("docs/storm-keys.md's note on %s:\n %s\nstormKeys's:\n %s", k.name, d[1], k.note)
		}
	}
	for name := range doc {
		if !code[name] {
			t.Errorf("docs/storm-keys.md lists %s, which stormKeys does not", name)
		}
	}
	if len(doc) < 100 {
		t.Errorf("found %d rows in docs/storm-keys.md; is the test reading its table?", len(doc))
	}
}

// TestStormKeysAgreeWithTheRegistry: a key the Storm table accepts is one
// of Gale's keys, and one it refuses is not and is refused with
// ErrUnsupportedKey, saying so and why, in any layer.
func TestStormKeysAgreeWithTheRegistry(t *testing.T) {
	for _, k := range stormKeys {
		_, known := configKeyIndex[k.name]
		if k.status == stormRefused {
			if known {
				t.Errorf("%s is refused in stormKeys but is one of Gale's keys", k.name)
			}
			if k.note == "" {
				t.Errorf("%s is refused without a reason", k.name)
			}
			for _, layer := range []Layer{LayerFile, LayerTopology, LayerComponent} {
				err := Validate(Config{k.name: 1}, layer)
				if !errors.Is(err, ErrUnsupportedKey) || errors.Is(err, ErrUnknownKey) ||
					!strings.Contains(err.Error(), "is not supported by Gale: "+k.note) {
					t.Errorf("%s %s: got %v, want ErrUnsupportedKey with its reason", k.name, layer, err)
				}
			}
			continue
		}
		if !known {
			t.Errorf("%s is %s in stormKeys but is not one of Gale's keys", k.name, k.status)
		}
		if k.status == stormDiffers && k.note == "" {
			t.Errorf("%s differs from Storm's without a note saying how", k.name)
		}
	}
}

// TestUserKeysBoundedPerLayer: the user keys of one layer may take 1 MiB
// as JSON in all; the key that passes it is named.
func TestUserKeysBoundedPerLayer(t *testing.T) {
	c := Config{}
	value := strings.Repeat("x", 62<<10) // 63,490 bytes as JSON
	for i := range 17 {
		c["starter.part"+string(rune('a'+i))] = value
	}
	err := Validate(c, LayerTopology)
	want := `config: user key "starter.partq" in topology config takes the user keys in topology config past 1024 KiB as JSON, their limit; put large data in a file or a store and the key's value its name`
	if err == nil || err.Error() != want || !errors.Is(err, ErrOutOfRange) {
		t.Errorf("got %v, want %s", err, want)
	}
	delete(c, "starter.partq")
	if err := Validate(c, LayerTopology); err != nil {
		t.Errorf("16 user keys of 62 KiB: %v, want accepted", err)
	}
}
