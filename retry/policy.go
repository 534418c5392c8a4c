// Package retry is what a spout needs to replay failed messages well
// (seed 003): a backoff policy with jitter and a cap on attempts, failure
// classes read from the Fail reason (gale.ClassOf), a fair share between
// retries and new messages so a failure storm never starves new data, and
// dead letters for what is given up, written somewhere that outlives a
// restart.
//
// Storm only reports a failure; re-emitting is the spout's job. A spout
// keeps each failed message in a Tracker: Failed says whether to retry it
// and when, or to give it up; Next hands back the retries that are due,
// leaving room for new messages. A spout gives a message up by sending
// its DeadLetter to a DeadLetterSink first and only then acking or
// committing it at the source, so a crash between the two leaves a
// duplicate dead letter, never a lost message. A sink that can store many
// letters at once implements BatchSink (FileSink does: one fsync a
// batch); SendAll uses it when it can.
//
// A DeadLetter keeps the message's key, value and Headers as bytes: the
// headers as a list of Header (key, value), in order, a key as often as
// the message has it and a null value (nil) apart from an empty one, as
// Kafka and NATS carry them. The JSONL file FileSink writes has them as
// {"key": ..., "value": base64 or null}; ReadFile also reads files
// written before, whose headers were an object of strings.
//
// The connectors (connectors/kafka, connectors/jetstream) use it; so can
// any spout.
package retry

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Policy says when a failed message is retried and when it is given up.
type Policy struct {
	// Initial is the delay before the first retry. Default 100ms.
	Initial time.Duration
	// Multiplier is how much the delay grows with each failure. Default 2.
	Multiplier float64
	// Max caps the delay before jitter. Default 10s.
	Max time.Duration
	// Jitter adds up to this fraction of the delay at random, so that
	// messages that failed together do not come back together. 0 means
	// none; DefaultPolicy has 0.2.
	Jitter float64
	// MaxAttempts is how many deliveries a message gets, the first
	// included, before it is given up. Default 5; negative means no limit
	// (a poison message then comes back forever).
	MaxAttempts int
	// RetriesPerNew is the fair share: while new messages wait, at most
	// this many retries are emitted in a row before a new one. Default 3,
	// so retries get at most three quarters of the emits in a storm.
	RetriesPerNew int
}

// Defaults of Policy's fields.
const (
	DefaultInitial       = 100 * time.Millisecond
	DefaultMultiplier    = 2.0
	DefaultMax           = 10 * time.Second
	DefaultJitter        = 0.2
	DefaultMaxAttempts   = 5
	DefaultRetriesPerNew = 3
)

// DefaultPolicy is the policy with every default.
func DefaultPolicy() Policy {
	return Policy{Initial: DefaultInitial, Multiplier: DefaultMultiplier, Max: DefaultMax,
		Jitter: DefaultJitter, MaxAttempts: DefaultMaxAttempts, RetriesPerNew: DefaultRetriesPerNew}
}

// WithDefaults returns p with each zero field but Jitter set to its
// default.
func (p Policy) WithDefaults() Policy {
	if p.Initial == 0 {
		p.Initial = DefaultInitial
	}
	if p.Multiplier == 0 {
		p.Multiplier = DefaultMultiplier
	}
	if p.Max == 0 {
		p.Max = DefaultMax
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.RetriesPerNew == 0 {
		p.RetriesPerNew = DefaultRetriesPerNew
	}
	return p
}

// Validate names the first field of p (after WithDefaults) that makes no
// sense.
func (p Policy) Validate() error {
	p = p.WithDefaults()
	switch {
	case p.Initial < 0:
		return fmt.Errorf("retry policy: initial delay %s is negative", p.Initial)
	case p.Multiplier < 1 || math.IsNaN(p.Multiplier) || math.IsInf(p.Multiplier, 0):
		return fmt.Errorf("retry policy: multiplier %v must be at least 1", p.Multiplier)
	case p.Max < p.Initial:
		return fmt.Errorf("retry policy: max delay %s is below the initial delay %s", p.Max, p.Initial)
	case p.Jitter < 0 || p.Jitter > 1 || math.IsNaN(p.Jitter):
		return fmt.Errorf("retry policy: jitter %v must be between 0 and 1", p.Jitter)
	case p.RetriesPerNew < 0:
		return fmt.Errorf("retry policy: retries per new message %d must be at least 1 (0 means the default, 3)", p.RetriesPerNew)
	}
	return nil
}

// Backoff is the delay before the retry that follows the failures-th
// failure (1 for the first): min(Max, Initial × Multiplier^(failures−1)),
// plus u × Jitter of it, where u in [0,1) is the random draw.
func (p Policy) Backoff(failures int, u float64) time.Duration {
	p = p.WithDefaults()
	d := float64(p.Initial) * math.Pow(p.Multiplier, float64(max(failures, 1)-1))
	if d > float64(p.Max) || math.IsInf(d, 0) || math.IsNaN(d) {
		d = float64(p.Max)
	}
	d += d * p.Jitter * min(max(u, 0), 1)
	return time.Duration(d)
}

// Config keys of a policy in map form, shared by every connector.
const (
	KeyInitialDelayMS = "retry.initial.delay.ms"
	KeyMultiplier     = "retry.multiplier"
	KeyMaxDelayMS     = "retry.max.delay.ms"
	KeyJitter         = "retry.jitter"
	KeyMaxAttempts    = "retry.max.attempts"
	KeyRetriesPerNew  = "retry.retries.per.new"
)

// ParsePolicy reads the retry.* keys of m over DefaultPolicy, for
// configurations written as data (YAML, JSON, multilang); keys without
// the retry. prefix are left to the caller. A key it does not know or a
// value of the wrong type is an error naming the key.
func ParsePolicy(m map[string]any) (Policy, error) {
	p := DefaultPolicy()
	for k, v := range m {
		var err error
		switch k {
		case KeyInitialDelayMS:
			var ms int64
			ms, err = integer(v)
			p.Initial = time.Duration(ms) * time.Millisecond
		case KeyMaxDelayMS:
			var ms int64
			ms, err = integer(v)
			p.Max = time.Duration(ms) * time.Millisecond
		case KeyMultiplier:
			p.Multiplier, err = number(v)
		case KeyJitter:
			p.Jitter, err = number(v)
		case KeyMaxAttempts:
			var n int64
			n, err = integer(v)
			p.MaxAttempts = int(n)
		case KeyRetriesPerNew:
			var n int64
			n, err = integer(v)
			p.RetriesPerNew = int(n)
		default:
			if len(k) > len("retry.") && k[:len("retry.")] == "retry." {
				return Policy{}, fmt.Errorf("unknown key %q: the retry keys are %s, %s, %s, %s, %s and %s",
					k, KeyInitialDelayMS, KeyMultiplier, KeyMaxDelayMS, KeyJitter, KeyMaxAttempts, KeyRetriesPerNew)
			}
			continue
		}
		if err != nil {
			return Policy{}, fmt.Errorf("key %q: %w", k, err)
		}
	}
	if p.MaxAttempts == 0 || p.RetriesPerNew == 0 {
		return Policy{}, errors.New("retry.max.attempts and retry.retries.per.new must not be 0 (negative max attempts means no limit)")
	}
	return p, p.Validate()
}

// Map is p in the map form ParsePolicy reads, defaults filled in.
func (p Policy) Map() map[string]any {
	p = p.WithDefaults()
	return map[string]any{
		KeyInitialDelayMS: p.Initial.Milliseconds(),
		KeyMultiplier:     p.Multiplier,
		KeyMaxDelayMS:     p.Max.Milliseconds(),
		KeyJitter:         p.Jitter,
		KeyMaxAttempts:    p.MaxAttempts,
		KeyRetriesPerNew:  p.RetriesPerNew,
	}
}

func integer(v any) (int64, error) {
	switch x := v.(type) {
	case int:
		return int64(x), nil
	case int64:
		return x, nil
	case int32:
		return int64(x), nil
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), nil
		}
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x), nil
		}
		return 0, fmt.Errorf("want an integer, got %v", x)
	}
	return 0, fmt.Errorf("want an integer, got %T %v", v, v)
}

func number(v any) (float64, error) {
	switch x := v.(type) {
	case float64:
		return x, nil
	case float32:
		return float64(x), nil
	case int, int64, int32, uint64:
		n, err := integer(x)
		return float64(n), err
	}
	return 0, fmt.Errorf("want a number, got %T %v", v, v)
}
