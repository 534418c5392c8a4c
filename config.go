package gale

import (
	"github.com/gale-stream/gale/internal/config"
)

// Config holds configuration values by Storm key name, e.g.
// gale.Config{gale.TopologyWorkers: 2}. Values may be of any type a JSON or
// YAML decoder produces for the key's type; StartLocal, RunLocal and
// `gale submit` check and normalise them, and so does Build for a
// component's config. A nil value for a key that is unset by default (such
// as TopologyMaxSpoutPending) unsets it at that layer.
//
// A topology's config may set the topology.* keys (the constants below)
// and user keys. A key outside the namespaces Gale and Storm reserve
// (topology., storm., nimbus., supervisor., worker., gale., drpc., ui. and
// the others in docs/storm-keys.md) is a user key, as in Storm: the
// topology or a component may set it, to any value JSON can carry of up
// to 64 KiB as JSON (1 MiB for all of one layer's), and every task reads
// it with TopologyContext.Config().Lookup. One of Storm's keys that Gale
// does not implement is refused with ErrUnsupportedKey, saying what to use
// instead; another key in a reserved namespace is unknown (ErrUnknownKey),
// with a did-you-mean. The cluster's own keys (nimbus., supervisor.,
// worker., gale. ...) are set in gale.yaml, not here; docs/config.md lists
// every key.
type Config map[string]any

// Errors a bad config causes, wrapped, from StartLocal, RunLocal, Build
// (a component's config) and `gale submit`. Compare with errors.Is; the
// message of the wrapping error names the key, where it was set and what
// to do.
var (
	// ErrUnknownKey reports a key in a reserved namespace (topology.,
	// storm., nimbus., ...) that Gale does not know.
	ErrUnknownKey = config.ErrUnknownKey
	// ErrUnsupportedKey reports one of Storm's keys that Gale does not
	// implement; the message says why and what to use instead
	// (docs/storm-keys.md lists them).
	ErrUnsupportedKey = config.ErrUnsupportedKey
	// ErrWrongType reports a value of the wrong type for its key.
	ErrWrongType = config.ErrWrongType
	// ErrForbiddenOverride reports a key set where it may not be: a
	// cluster key in a topology's config, or a key Storm does not allow
	// per component in a component's.
	ErrForbiddenOverride = config.ErrForbiddenOverride
	// ErrOutOfRange reports a value of the right type outside its key's range.
	ErrOutOfRange = config.ErrOutOfRange
)

// Effective is the configuration a task runs with, as its
// TopologyContext.Config gives it: Gale's built-in defaults, overlaid with
// the cluster's gale.yaml, the topology's config and the component's own,
// each overriding the one before. It is not modified once the task has it
// and is safe for concurrent use.
//
// The typed getters (Int, Bool, Float, String) panic when asked for a key
// that is not one of Gale's or is of another type: that is a programming
// error, not reachable from user input, since Gale validates every layer
// before a task starts. Lookup reads any key, user keys included.
type Effective struct {
	e *config.Effective
}

// Int returns the value of an integer key and whether it is set. It panics if
// key is unknown or not an integer key.
func (e *Effective) Int(key string) (v int, set bool) { return e.e.Int(key) }

// Bool returns the value of a boolean key (false when unset). It panics if
// key is unknown or not a boolean key.
func (e *Effective) Bool(key string) bool { return e.e.Bool(key) }

// Float returns the value of a number key and whether it is set. It
// panics if key is unknown or not a number key.
func (e *Effective) Float(key string) (v float64, set bool) { return e.e.Float(key) }

// String returns the value of a string key ("" when unset). It panics if key
// is unknown or not a string key.
func (e *Effective) String(key string) string { return e.e.String(key) }

// Lookup returns the effective value of any key, Gale's or a user key
// (one outside the reserved namespaces, such as "starter.top.n"), and
// whether it is set. A user key's value is what a JSON decoder gives for
// it: nil, bool, string, int for an integral number that fits, float64
// for another, []any or map[string]any, the same in one process and in
// worker processes. Gale's keys give their normalised types, as Map. The
// result is a copy the caller may modify.
func (e *Effective) Lookup(key string) (v any, set bool) { return e.e.Lookup(key) }

// Map returns the effective values of the keys that are set, Gale's
// normalised to int, bool, string, float64, []int, []string or
// map[string]int, and user keys as Lookup gives them: the map a Storm
// component receives in prepare. The result is a new map the caller may
// modify.
func (e *Effective) Map() Config { return e.e.Map() }
