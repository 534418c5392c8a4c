// Package config is Gale's configuration: the registry of every key Gale
// knows (its type, default, scope and one-line documentation), the
// validation of each layer (the built-in defaults, the cluster's
// gale.yaml, a topology's config and each component's), and the
// Effective configuration those layers resolve to. Package gale names the
// keys a topology sets and gives tasks a read-only view of an Effective
// (gale.TopologyContext.Config); nimbus, the supervisors, the workers and
// the command line use this package directly.
//
// A configuration layer is a map[string]any of values by Storm key name,
// e.g. {"topology.workers": 2}: package gale's Config, or what a JSON or
// YAML decoder produces. Values may be of any type a decoder produces for
// the key's type; Validate and Resolve check and normalise them. A nil
// value for a key that is unset by default (such as
// topology.max.spout.pending) unsets it at that layer.
//
// A key outside the namespaces Gale and Storm reserve (topology., storm.,
// nimbus., supervisor., worker., gale., drpc., ui. and the others in
// docs/storm-keys.md) is a user key, as in Storm: any layer but the
// defaults may set it, to any value JSON can carry of up to 64 KiB as
// JSON (1 MiB for all of one layer's), and every task reads it with
// Effective.Lookup. One of Storm's keys that Gale does not implement is
// refused with ErrUnsupportedKey, saying what to use instead; another key
// in a reserved namespace is unknown (ErrUnknownKey), with a
// did-you-mean.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// Errors returned, wrapped, by Validate, Resolve and ForComponent.
// Compare with errors.Is; the message of the wrapping error names the key,
// the layer and what to do.
var (
	// ErrUnknownKey reports a key in a reserved namespace (topology.,
	// storm., nimbus., ...) that Gale does not know.
	ErrUnknownKey = errors.New("config: unknown key")
	// ErrUnsupportedKey reports one of Storm's keys that Gale does not
	// implement; the message says why and what to use instead
	// (docs/storm-keys.md lists them).
	ErrUnsupportedKey = errors.New("config: key not supported by Gale")
	// ErrWrongType reports a value of the wrong type for its key.
	ErrWrongType = errors.New("config: wrong type")
	// ErrForbiddenOverride reports a key set in a layer that may not set it.
	ErrForbiddenOverride = errors.New("config: override not allowed")
	// ErrOutOfRange reports a value of the right type outside its key's range.
	ErrOutOfRange = errors.New("config: value out of range")
)

// Layer is a configuration layer. Later layers override earlier ones:
// LayerDefault < LayerFile < LayerTopology < LayerComponent.
type Layer int

const (
	// LayerDefault holds Gale's built-in defaults.
	LayerDefault Layer = iota
	// LayerFile is the cluster's gale.yaml (see LoadFile).
	LayerFile
	// LayerTopology is the config submitted with a topology. It may set only
	// "topology.*" keys and user keys.
	LayerTopology
	// LayerComponent is one component's config. It may set only the keys
	// Storm allows per component; the component's id is kept by Effective.
	LayerComponent
)

// String returns "default", "gale.yaml", "topology" or "component".
func (l Layer) String() string {
	switch l {
	case LayerDefault:
		return "default"
	case LayerFile:
		return "gale.yaml"
	case LayerTopology:
		return "topology"
	case LayerComponent:
		return "component"
	}
	return fmt.Sprintf("Layer(%d)", int(l))
}

// configError is one problem with one key. Its message is complete; Unwrap
// gives the sentinel for errors.Is.
type configError struct {
	sentinel error
	msg      string
}

func (e *configError) Error() string { return e.msg }
func (e *configError) Unwrap() error { return e.sentinel }

// configLayerPhrase says where a value was set, for error messages.
func configLayerPhrase(layer Layer, component string) string {
	switch layer {
	case LayerDefault:
		return "in the built-in defaults"
	case LayerFile:
		return "in gale.yaml"
	case LayerTopology:
		return "in topology config"
	case LayerComponent:
		if component != "" {
			return fmt.Sprintf("per component %q", component)
		}
		return "in component config"
	}
	return "in " + layer.String()
}

// Validate checks c as the given layer: every key is known or a user key
// (see the package doc), may be set in that layer, has a value of the
// right type and is in range. It reports all problems, joined with
// errors.Join. Values need not be normalised: the integer and list types
// produced by encoding/json and YAML decoders are accepted. Validate does
// not modify c.
func Validate(c map[string]any, layer Layer) error {
	_, err := normalise(c, layer, "")
	return err
}

// ValidateComponent checks c as the config of component id, as Validate
// does for LayerComponent; its messages name the component.
func ValidateComponent(id string, c map[string]any) error {
	_, err := normalise(c, LayerComponent, id)
	return err
}

// normalise validates c as layer (component names the component for
// LayerComponent) and returns its valid entries normalised to int, bool,
// string, float64, []int, []string or map[string]int (or nil to unset),
// plus every problem
// found. Keys are checked in sorted order so errors are reported
// deterministically.
func normalise(c map[string]any, layer Layer, component string) (map[string]any, error) {
	where := configLayerPhrase(layer, component)
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	slices.Sort(keys)

	out := make(map[string]any, len(c))
	var errs []error
	fail := func(sentinel error, format string, args ...any) {
		errs = append(errs, &configError{sentinel, fmt.Sprintf(format, args...)})
	}
	userBytes := 0
	for _, key := range keys {
		raw := c[key]
		spec, ok := configKeyIndex[key]
		if !ok {
			if sk := refusedStormKeys[strings.ToLower(key)]; sk != nil {
				fail(ErrUnsupportedKey, "config: %q %s is not supported by Gale: %s", key, where, sk.note)
				continue
			}
			if reservedKey(key) {
				fail(ErrUnknownKey, "config: unknown key %q %s %s", key, where, unknownKeyHint(key, raw))
				continue
			}
			if ns := misspeltNamespace(key); ns != "" {
				fail(ErrUnknownKey, "config: unknown key %q %s %s", key, where, misspeltKeyHint(key, ns))
				continue
			}
			if layer == LayerDefault {
				fail(ErrUnknownKey, "config: unknown key %q %s (the defaults hold Gale's keys only)", key, where)
				continue
			}
			// A user key: any JSON value, carried as it is.
			if raw == nil {
				out[key] = nil
				continue
			}
			v, size, sentinel, msg := normaliseUserValue(raw)
			if msg == "" && userBytes+size > maxUserConfigBytes {
				sentinel, msg = ErrOutOfRange, fmt.Sprintf("takes the user keys %s past %d KiB as JSON, their limit; put large data in a file or a store and the key's value its name", where, maxUserConfigBytes>>10)
			}
			if msg != "" {
				fail(sentinel, "config: user key %q %s %s", key, where, msg)
				continue
			}
			userBytes += size
			out[key] = v
			continue
		}
		if msg := scopeProblem(spec, layer); msg != "" {
			fail(ErrForbiddenOverride, "config: %q may not be set %s %s", key, where, msg)
			continue
		}
		if raw == nil {
			if spec.def != nil {
				fail(ErrWrongType, "config: %q %s must be %s, got null (remove the key to keep the default %s)",
					key, where, spec.kind, formatConfigValue(spec.def))
				continue
			}
			out[key] = nil
			continue
		}
		v, sentinel, msg := normaliseConfigValue(spec.kind, raw)
		if sentinel == ErrOutOfRange && spec.kind == configInt {
			// Beyond 64 bits: say what the key takes.
			msg = fmt.Sprintf("is out of range: %s, got %s", intRangePhrase(spec, !configNegative(raw)), describeConfigValue(raw))
		}
		if msg == "" && spec.check != nil {
			sentinel, msg = ErrOutOfRange, spec.check(v)
		}
		if msg != "" {
			fail(sentinel, "config: %q %s %s", key, where, msg)
			continue
		}
		out[key] = v
	}
	return out, errors.Join(errs...)
}

// intRangePhrase says what an integer key takes, for a value beyond 64
// bits on the positive or negative side: the key's own bound on that side
// if its check has one ("must be a port number from 0 to 65535"), else
// its other bound, if any, and the 64-bit one.
func intRangePhrase(spec *configKeySpec, positive bool) string {
	side, limit := math.MinInt, fmt.Sprintf("≥ %d", math.MinInt)
	if positive {
		side, limit = math.MaxInt, fmt.Sprintf("≤ %d", math.MaxInt)
	}
	bound := func(v int) string {
		if spec.check == nil {
			return ""
		}
		m, _, _ := strings.Cut(spec.check(v), ", got ")
		return m
	}
	if m := bound(side); m != "" {
		return m
	}
	if m := bound(math.MinInt); positive && m != "" {
		return m + " and " + limit
	}
	return "must be an integer " + limit
}

// configNegative reports whether a numeric raw value is below zero.
func configNegative(raw any) bool {
	switch x := raw.(type) {
	case json.Number:
		return strings.HasPrefix(string(x), "-")
	case yamlNumber:
		return strings.HasPrefix(string(x), "-")
	}
	f, ok := configFloat64(raw)
	return ok && f < 0
}

// scopeProblem returns why spec's key may not be set in layer, or "".
func scopeProblem(spec *configKeySpec, layer Layer) string {
	if spec.scope == ScopeSystem && layer != LayerDefault {
		return "(Gale sets it; remove it)"
	}
	switch layer {
	case LayerTopology:
		if spec.scope == ScopeCluster {
			return "(only topology.* keys may; set it in gale.yaml)"
		}
	case LayerComponent:
		if spec.scope != ScopeComponent {
			where := "topology config"
			if spec.scope == ScopeCluster {
				where = "gale.yaml"
			}
			return fmt.Sprintf("(allowed: %s; set it in %s)", strings.Join(componentConfigKeys, ", "), where)
		}
	}
	return ""
}

// unknownKeyHint tells the author of an unknown key what to do.
func unknownKeyHint(key string, value any) string {
	if rv := reflect.ValueOf(value); rv.Kind() == reflect.Map {
		for _, s := range configKeySpecs {
			if strings.HasPrefix(s.name, key+".") {
				return fmt.Sprintf("(keys are flat, dotted names such as %q, not nested mappings)", s.name)
			}
		}
	}
	if renamed, ok := renamedConfigKeys[strings.ToLower(key)]; ok {
		return fmt.Sprintf("(did you mean %q? it is a cluster setting, set in gale.yaml)", renamed)
	}
	if near := nearestConfigKey(key); near != "" {
		return fmt.Sprintf("(did you mean %q?)", near)
	}
	return `(run "gale config show" to list the known keys)`
}

// misspeltKeyHint suggests, for a key whose first word is a typo of the
// reserved namespace ns, the known key it may mean, and says how to name
// a key of one's own.
func misspeltKeyHint(key, ns string) string {
	_, rest, _ := strings.Cut(key, ".")
	if near := nearestConfigKey(ns + rest); near != "" {
		return fmt.Sprintf("(did you mean %q?)", near)
	}
	return fmt.Sprintf("(did you mean a key under %q? a key of your own must not look like one of Gale's namespaces)", ns)
}

// nearestConfigKey returns the known key closest to key by edit distance,
// ignoring case, if it is close enough to be a plausible typo.
func nearestConfigKey(key string) string {
	lower := strings.ToLower(key)
	best, bestDist := "", max(2, len(key)/3)+1
	for _, s := range configKeySpecs { // sorted, so ties go to the first name
		if d := configEditDistance(lower, s.name); d < bestDist {
			best, bestDist = s.name, d
		}
	}
	return best
}

// configEditDistance is the Levenshtein distance between a and b, in bytes.
func configEditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// normaliseConfigValue converts raw, which is not nil, to kind's Go type. On
// failure it returns the sentinel and a message such as
// `must be an integer, got string "two"`.
func normaliseConfigValue(kind configKind, raw any) (v any, sentinel error, msg string) {
	wrong := func() (any, error, string) {
		return nil, ErrWrongType, fmt.Sprintf("must be %s, got %s", kind, describeConfigValue(raw))
	}
	switch kind {
	case configInt:
		n, sentinel, desc := configInt64(raw)
		if sentinel != nil {
			return nil, sentinel, fmt.Sprintf("must be %s, got %s", configIntPhrase(sentinel), desc)
		}
		return n, nil, ""
	case configBool:
		if b, ok := raw.(bool); ok {
			return b, nil, ""
		}
		return wrong()
	case configString:
		if s, ok := raw.(string); ok {
			return s, nil, ""
		}
		return wrong()
	case configFloat:
		if f, ok := configFloat64(raw); ok {
			return f, nil, ""
		}
		return wrong()
	case configInts, configStrings:
		rv := reflect.ValueOf(raw)
		if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
			return wrong()
		}
		var ints []int
		var strs []string
		for i := range rv.Len() {
			elem := rv.Index(i).Interface()
			if kind == configInts {
				n, sentinel, desc := configInt64(elem)
				if sentinel != nil {
					what := kind.String()
					if sentinel == ErrOutOfRange {
						what += " that fit in 64 bits"
					}
					return nil, sentinel, fmt.Sprintf("must be %s, got %s at index %d", what, desc, i)
				}
				ints = append(ints, n)
				continue
			}
			s, ok := elem.(string)
			if !ok {
				return nil, ErrWrongType, fmt.Sprintf("must be %s, got %s at index %d", kind, describeConfigValue(elem), i)
			}
			strs = append(strs, s)
		}
		if kind == configInts {
			if ints == nil {
				ints = []int{}
			}
			return ints, nil, ""
		}
		if strs == nil {
			strs = []string{}
		}
		return strs, nil, ""
	case configIntMap:
		return normaliseIntMap(raw)
	}
	panic(fmt.Sprintf("gale: config kind %d has no normaliser", kind))
}

// normaliseIntMap converts a mapping of names to integers, as a YAML or
// JSON decoder gives it (map[string]any, with JSON's float64 numbers) or a
// Go map of string keys, to map[string]int. Entries are checked in name
// order, so the first one at fault is reported, by its name.
func normaliseIntMap(raw any) (v any, sentinel error, msg string) {
	rv := reflect.ValueOf(raw)
	if rv.Kind() != reflect.Map {
		return nil, ErrWrongType, fmt.Sprintf("must be %s, got %s", configIntMap, describeConfigValue(raw))
	}
	values := make(map[string]any, rv.Len())
	var badKeys []string
	for it := rv.MapRange(); it.Next(); {
		k := it.Key()
		if k.Kind() == reflect.Interface {
			k = k.Elem()
		}
		switch {
		case !k.IsValid():
			badKeys = append(badKeys, "null")
		case k.Kind() != reflect.String:
			badKeys = append(badKeys, describeConfigValue(k.Interface()))
		default:
			values[k.String()] = it.Value().Interface()
		}
	}
	if len(badKeys) > 0 {
		slices.Sort(badKeys)
		return nil, ErrWrongType, fmt.Sprintf("must be %s, got the key %s (a name is a string)", configIntMap, badKeys[0])
	}
	out := make(map[string]int, len(values))
	for _, name := range slices.Sorted(maps.Keys(values)) {
		n, sentinel, desc := configInt64(values[name])
		if sentinel != nil {
			what := configIntMap.String()
			if sentinel == ErrOutOfRange {
				what += " that fit in 64 bits"
			}
			return nil, sentinel, fmt.Sprintf("must be %s, got %s for %q", what, desc, name)
		}
		out[name] = n
	}
	return out, nil, ""
}

// configIntPhrase says what an integer key needs, given the sentinel
// configInt64 returned.
func configIntPhrase(sentinel error) string {
	if sentinel == ErrOutOfRange {
		return "an integer that fits in 64 bits"
	}
	return "an integer"
}

// configInt64 converts an integer-valued raw value to int. On failure it
// returns ErrWrongType or ErrOutOfRange (too large for an int) and a
// description of raw ("string \"two\"", "number 1.5").
func configInt64(raw any) (n int, sentinel error, desc string) {
	tooBig := func() (int, error, string) {
		return 0, ErrOutOfRange, describeConfigValue(raw)
	}
	switch x := raw.(type) {
	case int:
		return x, nil, ""
	case int8:
		return int(x), nil, ""
	case int16:
		return int(x), nil, ""
	case int32:
		return int(x), nil, ""
	case int64:
		if x < math.MinInt || x > math.MaxInt {
			return tooBig()
		}
		return int(x), nil, ""
	case uint:
		if x > math.MaxInt {
			return tooBig()
		}
		return int(x), nil, ""
	case uint8:
		return int(x), nil, ""
	case uint16:
		return int(x), nil, ""
	case uint32:
		if uint64(x) > math.MaxInt {
			return tooBig()
		}
		return int(x), nil, ""
	case uint64:
		if x > math.MaxInt {
			return tooBig()
		}
		return int(x), nil, ""
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return configInt64(i)
		}
	case yamlNumber:
		i, err := strconv.ParseInt(string(x), 0, 64)
		switch {
		case err == nil:
			return configInt64(i)
		case errors.Is(err, strconv.ErrRange):
			return tooBig()
		}
		if f, err := strconv.ParseFloat(string(x), 64); errors.Is(err, strconv.ErrRange) {
			return tooBig()
		} else if err == nil {
			return configInt64(f)
		}
		return 0, ErrWrongType, describeConfigValue(raw)
	}
	f, ok := configFloat64(raw)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) {
		return 0, ErrWrongType, describeConfigValue(raw)
	}
	// float64(math.MaxInt) rounds up to 2^63, so the upper bound is exclusive.
	if f < math.MinInt || f >= math.MaxInt {
		return tooBig()
	}
	return int(f), nil, ""
}

// configFloat64 converts any numeric raw value to float64.
func configFloat64(raw any) (float64, bool) {
	switch x := raw.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case yamlNumber:
		f, err := strconv.ParseFloat(string(x), 64)
		return f, err == nil
	}
	rv := reflect.ValueOf(raw)
	switch {
	case rv.CanInt():
		return float64(rv.Int()), true
	case rv.CanUint():
		return float64(rv.Uint()), true
	}
	return 0, false
}

// describeConfigValue names a raw value in YAML and JSON terms.
func describeConfigValue(raw any) string {
	switch x := raw.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("string %q", x)
	case bool:
		return fmt.Sprintf("boolean %t", x)
	case float64:
		return "number " + strconv.FormatFloat(x, 'g', -1, 64)
	case float32:
		return "number " + strconv.FormatFloat(float64(x), 'g', -1, 32)
	case json.Number:
		return "number " + x.String()
	case yamlNumber:
		return "number " + string(x)
	}
	rv := reflect.ValueOf(raw)
	switch {
	case rv.CanInt():
		return fmt.Sprintf("integer %d", rv.Int())
	case rv.CanUint():
		return fmt.Sprintf("integer %d", rv.Uint())
	case rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array:
		return "a list"
	case rv.Kind() == reflect.Map:
		return "a mapping"
	}
	return fmt.Sprintf("a value of Go type %T", raw)
}

// formatConfigValue formats a normalised value for messages.
func formatConfigValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "(unset)"
	case string:
		return strconv.Quote(x)
	case map[string]int:
		return formatIntMap(x)
	}
	return fmt.Sprint(v)
}

// formatIntMap formats a mapping of names to integers as YAML's flow
// style writes it, in name order: {billing: 1, wordcount: 2}, or {} when
// empty.
func formatIntMap(m map[string]int) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, name := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %d", name, m[name])
	}
	b.WriteByte('}')
	return b.String()
}

// configSetting is one key's effective value and where it came from.
type configSetting struct {
	value  any // normalised; nil when unset
	source Layer
}

// Effective is a resolved configuration: every known key's value (or unset)
// and the layer it came from. Build one with Resolve, then
// ForComponent for each component. An Effective is not modified after it is
// built and is safe for concurrent use.
//
// The typed getters (Int, Bool, ...) panic when asked for an unknown key or a
// key of another type: that is a programming error, not reachable from user
// input, since Gale validates user config before building an Effective.
type Effective struct {
	component string // set by ForComponent
	values    map[string]configSetting
}

// Resolve layers the built-in defaults, the cluster's gale.yaml (file)
// and a topology's config, each overriding the one before, and returns the
// result. Either config may be nil. It validates both and reports every
// problem at once, joined with errors.Join.
func Resolve(file, topology map[string]any) (*Effective, error) {
	f, fileErr := normalise(file, LayerFile, "")
	t, topoErr := normalise(topology, LayerTopology, "")
	if err := errors.Join(fileErr, topoErr); err != nil {
		return nil, err
	}
	e := &Effective{values: make(map[string]configSetting, len(configKeySpecs))}
	for _, s := range configKeySpecs {
		e.values[s.name] = configSetting{s.def, LayerDefault}
	}
	e.overlay(f, LayerFile)
	e.overlay(t, LayerTopology)
	return e, nil
}

// ForComponent returns the effective config of component id: e overlaid with
// the component's own config, which may set only the keys Storm allows per
// component (TopologyDebug, TopologyMaxSpoutPending,
// TopologyMaxTaskParallelism, TopologyTickTupleFreqSecs and Gale's
// TopologyComponentPanicPolicy and TopologyTupleReuse) and user keys. e
// must be the topology-level config from Resolve, not another
// component's; e is not modified.
func (e *Effective) ForComponent(id string, component map[string]any) (*Effective, error) {
	if e.component != "" {
		panic(fmt.Sprintf("gale: ForComponent(%q) called on the config of component %q; call it on the topology's config", id, e.component))
	}
	c, err := normalise(component, LayerComponent, id)
	if err != nil {
		return nil, err
	}
	out := e.clone()
	out.component = id
	out.overlay(c, LayerComponent)
	return out, nil
}

// WithTopologyName returns a copy of e with TopologyName set to name,
// attributed to LayerTopology. Gale calls it at submission; no configuration
// layer may set TopologyName.
func (e *Effective) WithTopologyName(name string) *Effective {
	out := e.clone()
	out.values[TopologyName] = configSetting{name, LayerTopology}
	return out
}

func (e *Effective) clone() *Effective {
	out := &Effective{component: e.component, values: make(map[string]configSetting, len(e.values))}
	for k, s := range e.values {
		out.values[k] = s
	}
	return out
}

// overlay sets the normalised values of c, attributed to layer.
func (e *Effective) overlay(c map[string]any, layer Layer) {
	for k, v := range c {
		e.values[k] = configSetting{v, layer}
	}
}

// setting returns the setting of key, which must be a known key of kind.
func (e *Effective) setting(key string, kind configKind) configSetting {
	spec, ok := configKeyIndex[key]
	if !ok {
		panic(fmt.Sprintf("gale: unknown config key %q", key))
	}
	if spec.kind != kind {
		panic(fmt.Sprintf("gale: config key %q is %s, not %s", key, spec.kind, kind))
	}
	return e.values[key]
}

// Int returns the value of an integer key and whether it is set. It panics if
// key is unknown or not an integer key.
func (e *Effective) Int(key string) (v int, set bool) {
	s := e.setting(key, configInt)
	if s.value == nil {
		return 0, false
	}
	return s.value.(int), true
}

// Bool returns the value of a boolean key (false when unset). It panics if
// key is unknown or not a boolean key.
func (e *Effective) Bool(key string) bool {
	b, _ := e.setting(key, configBool).value.(bool)
	return b
}

// Float returns the value of a number key and whether it is set. It
// panics if key is unknown or not a number key.
func (e *Effective) Float(key string) (v float64, set bool) {
	f, ok := e.setting(key, configFloat).value.(float64)
	return f, ok
}

// String returns the value of a string key ("" when unset). It panics if key
// is unknown or not a string key.
func (e *Effective) String(key string) string {
	s, _ := e.setting(key, configString).value.(string)
	return s
}

// Ints returns a copy of the value of an integer-list key (nil when unset).
// It panics if key is unknown or not an integer-list key.
func (e *Effective) Ints(key string) []int {
	v, _ := e.setting(key, configInts).value.([]int)
	return slices.Clone(v)
}

// Strings returns a copy of the value of a string-list key (nil when unset).
// It panics if key is unknown or not a string-list key.
func (e *Effective) Strings(key string) []string {
	v, _ := e.setting(key, configStrings).value.([]string)
	return slices.Clone(v)
}

// IntMap returns a copy of the value of a mapping key, such as
// IsolationSchedulerMachines (empty, not nil, when the mapping is empty;
// nil when unset). It panics if key is unknown or not a mapping of names
// to integers.
func (e *Effective) IntMap(key string) map[string]int {
	v, _ := e.setting(key, configIntMap).value.(map[string]int)
	return maps.Clone(v)
}

// Lookup returns the effective value of any key, Gale's or a user key
// (one outside the reserved namespaces, such as "starter.top.n"), and
// whether it is set. A user key's value is what a JSON decoder gives for
// it: nil, bool, string, int for an integral number that fits, float64
// for another, []any or map[string]any, the same in one process and in
// worker processes. Gale's keys give their normalised types, as Map. The
// result is a copy the caller may modify.
func (e *Effective) Lookup(key string) (v any, set bool) {
	s, ok := e.values[key]
	if !ok || s.value == nil {
		return nil, false
	}
	return cloneConfigValue(s.value), true
}

// Source returns the layer that set key's effective value (LayerDefault for
// a key no layer set). It panics if key is neither one of Gale's keys nor
// a user key some layer set.
func (e *Effective) Source(key string) Layer {
	s, ok := e.values[key]
	if !ok {
		panic(fmt.Sprintf("gale: unknown config key %q", key))
	}
	return s.source
}

// Component returns the component id given to ForComponent, or "" for a
// topology-level config.
func (e *Effective) Component() string { return e.component }

// Entry is one key of an effective config, as `gale config show`
// prints it.
type Entry struct {
	// Key is the key's name, e.g. "topology.workers".
	Key string
	// Value is the effective value, normalised to int, bool, string,
	// float64, []int, []string or map[string]int; nil when unset.
	Value any
	// Source is the layer the value came from.
	Source Layer
	// Component is the component id when Source is LayerComponent.
	Component string
	// Scope says which layers may set the key.
	Scope Scope
	// Doc is a one-line description of the key.
	Doc string
}

// SourceName returns Source as a string, with the component id for
// LayerComponent ("component split").
func (c Entry) SourceName() string {
	if c.Source == LayerComponent && c.Component != "" {
		return "component " + c.Component
	}
	return c.Source.String()
}

// Entries returns every one of Gale's keys, sorted by key, with its
// effective value, source, scope and documentation. User keys are not
// listed; Lookup and Map give them.
func (e *Effective) Entries() []Entry {
	out := make([]Entry, 0, len(configKeySpecs))
	for _, spec := range configKeySpecs {
		s := e.values[spec.name]
		entry := Entry{
			Key:    spec.name,
			Value:  cloneConfigValue(s.value),
			Source: s.source,
			Scope:  spec.scope,
			Doc:    spec.doc,
		}
		if s.source == LayerComponent {
			entry.Component = e.component
		}
		out = append(out, entry)
	}
	return out
}

// Map returns the effective values of the keys that are set, user keys
// included. The result is
// a new map the caller may modify.
func (e *Effective) Map() map[string]any {
	out := make(map[string]any, len(e.values))
	for k, s := range e.values {
		if s.value != nil {
			out[k] = cloneConfigValue(s.value)
		}
	}
	return out
}

func cloneConfigValue(v any) any {
	switch x := v.(type) {
	case []any, map[string]any:
		return cloneJSONValue(x)
	case []int:
		return slices.Clone(x)
	case []string:
		return slices.Clone(x)
	case map[string]int:
		return maps.Clone(x)
	}
	return v
}

// LoadFile reads a gale.yaml file: a YAML mapping of flat, dotted
// Storm key names to values, e.g. "topology.workers: 2". An empty file gives
// an empty map. A file that cannot be read (including a missing file,
// which matches fs.ErrNotExist), is not text, or is not valid YAML is an
// error naming the path; YAML errors keep their line and column, and what
// they show of the file is quoted and cut short. An unquoted number too
// large for its type is kept as a number, for Resolve to report as
// out of range. LoadFile does not check the keys or values:
// Resolve does.
func LoadFile(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err) // *fs.PathError names the path
	}
	if msg := notText(data); msg != "" {
		return nil, fmt.Errorf("config: %s is not a text file (%s): a gale.yaml is YAML text, such as \"topology.workers: 2\"", path, msg)
	}
	var c map[string]any
	if err := yaml.Unmarshal(data, &c); err != nil {
		return nil, &yamlFileError{path: path, data: data, err: err}
	}
	if c == nil {
		c = map[string]any{}
	}
	keepBigNumbers(data, c)
	return c, nil
}

// notText says why data is not a text file ("byte 0x00 at offset 24"), or
// returns "" if it is UTF-8 without control characters other than tab,
// newline and carriage return.
func notText(data []byte) string {
	for off := 0; off < len(data); {
		r, n := utf8.DecodeRune(data[off:])
		switch {
		case r == utf8.RuneError && n <= 1:
			return fmt.Sprintf("byte %#02x at offset %d is not UTF-8", data[off], off)
		case r < ' ' && r != '\t' && r != '\n' && r != '\r', r == 0x7f:
			return fmt.Sprintf("control character %#02x at offset %d", r, off)
		}
		off += n
	}
	return ""
}

// maxExcerpt bounds how much of a line of a config file an error shows.
const maxExcerpt = 80

// excerpt returns s quoted, cut to maxExcerpt bytes (at a rune boundary)
// with "…" after the cut.
func excerpt(s string) string {
	if len(s) <= maxExcerpt {
		return strconv.Quote(s)
	}
	cut := maxExcerpt
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…"
}

// yamlFileError is a YAML error in a config file. Its message gives the
// path, the line and column, the parser's message and the line at fault,
// quoted and cut short, never the file's raw bytes. Unwrap gives the
// parser's error.
type yamlFileError struct {
	path string
	data []byte
	err  error
}

func (e *yamlFileError) Error() string {
	var ye yaml.Error
	if !errors.As(e.err, &ye) || ye.GetToken() == nil {
		msg := strings.ReplaceAll(e.err.Error(), "\n", " ")
		if len(msg) > 4*maxExcerpt {
			msg = msg[:4*maxExcerpt] + "…"
		}
		return fmt.Sprintf("config: %s: %s", e.path, strings.ToValidUTF8(msg, "?"))
	}
	pos := ye.GetToken().Position
	msg := fmt.Sprintf("config: %s:%d:%d: %s", e.path, pos.Line, pos.Column, ye.GetMessage())
	lines := strings.Split(string(e.data), "\n")
	if pos.Line >= 1 && pos.Line <= len(lines) {
		msg += fmt.Sprintf(" (line %d: %s)", pos.Line, excerpt(strings.TrimRight(lines[pos.Line-1], "\r")))
	}
	return msg
}

func (e *yamlFileError) Unwrap() error { return e.err }

// yamlNumber is an unquoted YAML scalar that reads as a number but that
// the YAML decoder could not hold (an integer beyond 64 bits, a float
// beyond float64) and gave as a string: it stays a number, so that the
// error says it is out of range, not that it is a string.
type yamlNumber string

// yamlNumberSyntax matches YAML's integer and float literals.
var yamlNumberSyntax = regexp.MustCompile(`^[-+]?(0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|[0-9][0-9_]*(\.[0-9_]*)?([eE][-+]?[0-9]+)?|\.[0-9]+([eE][-+]?[0-9]+)?)$`)

// keepBigNumbers replaces, in c as decoded from data, the strings that
// data gives as unquoted numbers with yamlNumbers: top-level values, the
// elements of top-level lists and the values of top-level mappings, except
// for keys that take strings, which keep them as written.
func keepBigNumbers(data []byte, c map[string]any) {
	f, err := parser.ParseBytes(data, 0)
	if err != nil || len(f.Docs) == 0 {
		return
	}
	number := func(n ast.Node) (yamlNumber, bool) {
		sn, ok := n.(*ast.StringNode)
		if !ok || sn.Token == nil || sn.Token.Type != token.StringType || !yamlNumberSyntax.MatchString(sn.Value) {
			return "", false
		}
		return yamlNumber(sn.Value), true
	}
	for _, kv := range yamlPairs(f.Docs[0].Body) {
		key, ok := kv.Key.(*ast.StringNode)
		if !ok {
			continue
		}
		if spec, ok := configKeyIndex[key.Value]; ok && (spec.kind == configString || spec.kind == configStrings) {
			continue
		}
		switch v := c[key.Value].(type) {
		case string:
			if n, ok := number(kv.Value); ok && v == string(n) {
				c[key.Value] = n
			}
		case []any:
			seq, ok := kv.Value.(*ast.SequenceNode)
			if !ok || len(seq.Values) != len(v) {
				continue
			}
			for i, elem := range seq.Values {
				if n, ok := number(elem); ok && v[i] == string(n) {
					v[i] = n
				}
			}
		case map[string]any:
			for _, entry := range yamlPairs(kv.Value) {
				name, ok := entry.Key.(*ast.StringNode)
				if !ok {
					continue
				}
				if n, ok := number(entry.Value); ok && v[name.Value] == string(n) {
					v[name.Value] = n
				}
			}
		}
	}
}

// yamlPairs returns the key-value pairs of a YAML mapping node, or nil if
// n is not a mapping. The parser gives a mapping of one pair as the pair
// itself.
func yamlPairs(n ast.Node) []*ast.MappingValueNode {
	switch n := n.(type) {
	case *ast.MappingNode:
		return n.Values
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{n}
	}
	return nil
}
