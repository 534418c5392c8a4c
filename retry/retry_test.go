package retry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func TestBackoff(t *testing.T) {
	p := Policy{Initial: 100 * time.Millisecond, Multiplier: 2, Max: time.Second, Jitter: 0.2}
	for _, tc := range []struct {
		failures int
		u        float64
		want     time.Duration
	}{
		{1, 0, 100 * time.Millisecond},
		{2, 0, 200 * time.Millisecond},
		{4, 0, 800 * time.Millisecond},
		{5, 0, time.Second}, // capped
		{500, 0, time.Second},
		{1, 0.5, 110 * time.Millisecond},  // +10%: half the jitter
		{9, 0.5, 1100 * time.Millisecond}, // jitter on top of the cap
		{0, 0, 100 * time.Millisecond},    // nonsense counts as the first
	} {
		if got := p.Backoff(tc.failures, tc.u); got.Round(time.Microsecond) != tc.want {
			t.Errorf("Backoff(%d, %v) = %s, want %s", tc.failures, tc.u, got, tc.want)
		}
	}
}

// TestTrackerClasses: a transient failure is retried after the backoff, a
// delayable one no sooner than its delay, a permanent one never; the
// counters say so.
func TestTrackerClasses(t *testing.T) {
	tr := NewTracker[string](Policy{Initial: time.Second, Multiplier: 2, Max: time.Minute}, 1)
	boom := errors.New("boom")
	o := tr.Failed("a", 1, &gale.FailedError{Component: "b", Err: boom}, t0)
	if !o.Retry || o.GiveUp || !o.At.Equal(t0.Add(time.Second)) || o.Class != gale.ClassTransient {
		t.Fatalf("transient: %+v, want a retry at +1s", o)
	}
	o = tr.Failed("b", 1, &gale.FailedError{Err: gale.Delayed(boom, 30*time.Second)}, t0)
	if !o.Retry || !o.At.Equal(t0.Add(30*time.Second)) || o.Class != gale.ClassDelayable {
		t.Fatalf("delayable: %+v, want a retry at +30s", o)
	}
	o = tr.Failed("c", 1, &gale.FailedError{Err: gale.Permanent(boom)}, t0)
	if o.Retry || !o.GiveUp || o.Letter.Attempts != 1 || o.Letter.Class != "permanent" || !strings.Contains(o.Letter.LastError, "boom") {
		t.Fatalf("permanent: %+v, want given up at once", o)
	}
	o = tr.Failed("d", 2, fmt.Errorf("%w after 30s", gale.ErrTimeout), t0)
	if !o.Retry || !o.At.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("timeout, second failure: %+v, want a retry at +2s", o)
	}
	if _, _, ok := tr.Next(t0.Add(time.Second-1), false); ok {
		t.Fatal("Next handed out a retry before it was due")
	}
	var got []string
	for _, now := range []time.Duration{time.Second, 2 * time.Second, 29 * time.Second, 30 * time.Second} {
		for {
			m, _, ok := tr.Next(t0.Add(now), false)
			if !ok {
				break
			}
			got = append(got, fmt.Sprintf("%s@%s", m, now))
		}
	}
	if want := "a@1s d@2s b@30s"; strings.Join(got, " ") != want {
		t.Errorf("retries came as %q, want %q", strings.Join(got, " "), want)
	}
	s := tr.Stats()
	if s.Transient.Load() != 2 || s.TimedOut.Load() != 1 || s.Delayable.Load() != 1 || s.Permanent.Load() != 1 ||
		s.DeadLettered.Load() != 1 || s.Retries.Load() != 3 {
		t.Errorf("stats transient %d timed out %d delayable %d permanent %d dead %d retries %d",
			s.Transient.Load(), s.TimedOut.Load(), s.Delayable.Load(), s.Permanent.Load(), s.DeadLettered.Load(), s.Retries.Load())
	}
}

// TestTrackerMaxAttempts: a message that fails every time is retried
// until its MaxAttempts-th delivery failed, then given up, with the
// delays growing.
func TestTrackerMaxAttempts(t *testing.T) {
	tr := NewTracker[int](Policy{Initial: time.Second, Multiplier: 3, Max: time.Hour, MaxAttempts: 4}, 7)
	now := t0
	var delays []time.Duration
	attempts := 1
	for {
		o := tr.Failed(42, attempts, errors.New("again"), now)
		if o.GiveUp {
			if attempts != 4 || o.Letter.Attempts != 4 || o.Letter.LastError != "again" || !o.Letter.GaveUp.Equal(now) {
				t.Fatalf("gave up after %d deliveries with %+v, want after 4", attempts, o.Letter)
			}
			break
		}
		delays = append(delays, o.At.Sub(now))
		m, a, ok := tr.Next(o.At, false)
		if !ok || m != 42 || a != attempts {
			t.Fatalf("Next at the due time = %v %d %v", m, a, ok)
		}
		now, attempts = o.At, a+1
	}
	if want := []time.Duration{time.Second, 3 * time.Second, 9 * time.Second}; fmt.Sprint(delays) != fmt.Sprint(want) {
		t.Errorf("delays %v, want %v", delays, want)
	}
}

// TestTrackerShutdownCostsNoAttempt: a tree failed by a shutdown is not
// the message's failure, even on its last attempt.
func TestTrackerShutdownCostsNoAttempt(t *testing.T) {
	tr := NewTracker[int](Policy{MaxAttempts: 2}, 1)
	o := tr.Failed(7, 2, gale.ErrShutdown, t0)
	if o.GiveUp || !o.Retry || !o.At.Equal(t0) {
		t.Fatalf("shutdown on the last attempt: %+v, want queued again at once", o)
	}
	m, a, ok := tr.Next(t0, false)
	if !ok || m != 7 || a != 1 {
		t.Fatalf("Next = %v %d %v, want 7 with 1 delivery counted", m, a, ok)
	}
	if s := tr.Stats(); s.Transient.Load()+s.DeadLettered.Load() != 0 {
		t.Errorf("a shutdown counted as a failure: %d transient, %d dead", s.Transient.Load(), s.DeadLettered.Load())
	}
}

// TestTrackerFairShare: with a storm of due retries and new messages
// waiting, Next gives at most RetriesPerNew retries in a row; with no new
// message waiting, retries take every turn.
func TestTrackerFairShare(t *testing.T) {
	tr := NewTracker[int](Policy{Initial: time.Millisecond, RetriesPerNew: 3}, 1)
	for i := range 1000 {
		tr.Failed(i, 1, errors.New("storm"), t0)
	}
	now := t0.Add(time.Second)
	var retries, fresh int
	for range 400 {
		if _, _, ok := tr.Next(now, true); ok {
			retries++
			continue
		}
		fresh++
		tr.EmittedNew()
	}
	if retries != 300 || fresh != 100 {
		t.Fatalf("400 emits in a storm: %d retries, %d new; want 300 and 100 (3 retries per new)", retries, fresh)
	}
	t.Logf("storm: %d retries to %d new messages", retries, fresh)
	n := 0
	for {
		if _, _, ok := tr.Next(now, false); !ok {
			break
		}
		n++
	}
	if n != 700 || tr.Len() != 0 {
		t.Errorf("with nothing new waiting, %d retries came (left %d), want all 700", n, tr.Len())
	}
}

func TestTrackerDeterministicAndDrop(t *testing.T) {
	run := func() []time.Time {
		tr := NewTracker[int](DefaultPolicy(), 99)
		var at []time.Time
		for i := range 20 {
			at = append(at, tr.Failed(i, 1+i%4, errors.New("x"), t0).At)
		}
		return at
	}
	a, b := run(), run()
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatal("the same seed and times gave different retry times")
	}
	jittered := false
	for i := range a {
		if base := DefaultPolicy().Backoff(1+i%4, 0); a[i].Sub(t0) != base {
			jittered = true
		}
	}
	if !jittered {
		t.Error("no retry time carries jitter")
	}
	tr := NewTracker[int](DefaultPolicy(), 1)
	for i := range 10 {
		tr.Failed(i, 1, errors.New("x"), t0)
	}
	tr.Drop(func(m int) bool { return m%2 == 0 })
	var left []int
	for {
		m, _, ok := tr.Next(t0.Add(time.Hour), false)
		if !ok {
			break
		}
		left = append(left, m)
	}
	if len(left) != 5 {
		t.Fatalf("after dropping the odd ones %v are left", left)
	}
	for _, m := range left {
		if m%2 != 0 {
			t.Fatalf("dropped %d came back", m)
		}
	}
}

func TestParsePolicy(t *testing.T) {
	p, err := ParsePolicy(map[string]any{
		"retry.initial.delay.ms": float64(250), // as JSON decodes it
		"retry.multiplier":       1.5,
		"retry.max.delay.ms":     60000,
		"retry.jitter":           0,
		"retry.max.attempts":     -1,
		"retry.retries.per.new":  2,
		"topic":                  "not ours",
	})
	want := Policy{Initial: 250 * time.Millisecond, Multiplier: 1.5, Max: time.Minute, Jitter: 0, MaxAttempts: -1, RetriesPerNew: 2}
	if err != nil || p != want {
		t.Fatalf("ParsePolicy = %+v, %v; want %+v", p, err, want)
	}
	if back, err := ParsePolicy(p.Map()); err != nil || back != p {
		t.Errorf("ParsePolicy(p.Map()) = %+v, %v; want %+v back", back, err, p)
	}
	if p, err := ParsePolicy(nil); err != nil || p != DefaultPolicy() {
		t.Errorf("ParsePolicy(nil) = %+v, %v; want the defaults", p, err)
	}
	for _, tc := range []struct {
		m    map[string]any
		want string
	}{
		{map[string]any{"retry.max.attempt": 3}, `unknown key "retry.max.attempt"`},
		{map[string]any{"retry.initial.delay.ms": "1s"}, `key "retry.initial.delay.ms": want an integer`},
		{map[string]any{"retry.max.attempts": 2.5}, `key "retry.max.attempts": want an integer`},
		{map[string]any{"retry.jitter": 3}, "jitter 3 must be between 0 and 1"},
		{map[string]any{"retry.multiplier": 0.5}, "multiplier 0.5 must be at least 1"},
		{map[string]any{"retry.max.delay.ms": 10, "retry.initial.delay.ms": 20}, "below the initial delay"},
		{map[string]any{"retry.max.attempts": 0}, "must not be 0"},
	} {
		if _, err := ParsePolicy(tc.m); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParsePolicy(%v) = %v, want an error containing %q", tc.m, err, tc.want)
		}
	}
}

// TestFileSink: letters outlive the sink (reopened, as after a restart),
// a line torn by a crash is ended and skipped, and the letters after it
// are read back.
func TestFileSink(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dead.jsonl")
	ctx := context.Background()
	s, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l := DeadLetter{Source: "kafka:orders/3@1207", Key: []byte("k"), Value: []byte(`{"id":1}`),
		Attempts: 5, Class: "transient", LastError: "boom", GaveUp: t0, Topology: "t", Component: "orders"}
	if err := s.Send(ctx, l); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := s.Send(ctx, l); err == nil {
		t.Error("Send after Close succeeded")
	}
	// A crash mid-write leaves half a line.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"source":"kafka:orders/3@12`)
	f.Close()
	s, err = OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l2 := l
	l2.Source, l2.Value = "kafka:orders/3@1300", []byte{0xff, 0, 1}
	if err := s.Send(ctx, l2); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if !errors.Is(err, ErrTornLines) || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("ReadFile error %v, want the torn line 2 named", err)
	}
	if len(got) != 2 || got[0].Source != l.Source || string(got[0].Value) != `{"id":1}` || got[0].Attempts != 5 ||
		!got[0].GaveUp.Equal(t0) || got[1].Source != l2.Source || string(got[1].Value) != string(l2.Value) {
		t.Fatalf("read back %+v", got)
	}
}

// exactHeaders are headers a map[string]string cannot keep: a repeated
// key (its values in order), a binary value, a null value and an empty
// one.
var exactHeaders = Headers{
	{Key: "trace", Value: []byte("a")},
	{Key: "bin", Value: []byte{0xff, 0x00, 0xfe, '\n'}},
	{Key: "trace", Value: []byte("b")},
	{Key: "null", Value: nil},
	{Key: "empty", Value: []byte{}},
}

// sameHeaders reports whether got is want exactly: keys, order, bytes,
// and a null value told from an empty one.
func sameHeaders(got, want Headers) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i].Key != want[i].Key || (got[i].Value == nil) != (want[i].Value == nil) ||
			string(got[i].Value) != string(want[i].Value) {
			return false
		}
	}
	return true
}

// TestFileSinkKeepsHeadersExactly: a letter's headers come back from the
// file as they went in, and a batch of letters is written whole.
func TestFileSinkKeepsHeadersExactly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dead.jsonl")
	s, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var batch []DeadLetter
	for i := range 3 {
		batch = append(batch, DeadLetter{Source: fmt.Sprintf("kafka:t/0@%d", i), Value: []byte{byte(i)}, Headers: exactHeaders, GaveUp: t0})
	}
	if err := SendAll(context.Background(), s, batch); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil || len(got) != 3 {
		t.Fatalf("ReadFile: %d letters, %v; want 3", len(got), err)
	}
	for i, l := range got {
		if l.Source != batch[i].Source || !sameHeaders(l.Headers, exactHeaders) {
			t.Errorf("letter %d: %s with headers %q, want %s with %q", i, l.Source, l.Headers, batch[i].Source, exactHeaders)
		}
	}
	if v := got[0].Headers.Values("trace"); len(v) != 2 || string(v[0]) != "a" || string(v[1]) != "b" {
		t.Errorf(`Values("trace") = %q, want ["a" "b"]`, v)
	}
}

// TestReadFileOldHeaders: a file written before headers were a list (an
// object of strings) is still read, its headers sorted by key.
func TestReadFileOldHeaders(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.jsonl")
	line := `{"source":"kafka:t/0@1","value":"eA==","headers":{"z":"2","a":"1"},"attempts":1,"class":"permanent","last_error":"x","gave_up":"2026-12-01T12:00:00Z"}` + "\n"
	if err := os.WriteFile(path, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil || len(got) != 1 {
		t.Fatalf("ReadFile: %+v, %v", got, err)
	}
	want := Headers{{Key: "a", Value: []byte("1")}, {Key: "z", Value: []byte("2")}}
	if !sameHeaders(got[0].Headers, want) || string(got[0].Value) != "x" {
		t.Errorf("read %q, value %q; want %q, value x", got[0].Headers, got[0].Value, want)
	}
}
