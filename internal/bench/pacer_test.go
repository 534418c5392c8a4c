package bench

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestPacerDue(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	p := NewPacer(1000, t0) // one emit per millisecond
	steps := []struct {
		name      string
		now       time.Time
		wantSched time.Time
		wantOK    bool
	}{
		{"first emit due at start", t0, ms(0), true},
		{"second not yet due", t0, ms(1), false},
		{"still not due just before", ms(1).Add(-time.Nanosecond), ms(1), false},
		{"due exactly on time", ms(1), ms(1), true},
		{"behind: backlog returns past schedule 2", ms(5), ms(2), true},
		{"backlog 3", ms(5), ms(3), true},
		{"backlog 4", ms(5), ms(4), true},
		{"backlog 5", ms(5), ms(5), true},
		{"caught up", ms(5), ms(6), false},
	}
	for _, s := range steps {
		sched, ok := p.Due(s.now)
		if !sched.Equal(s.wantSched) || ok != s.wantOK {
			t.Fatalf("%s: Due(start+%v) = (start+%v, %v), want (start+%v, %v)",
				s.name, s.now.Sub(t0), sched.Sub(t0), ok, s.wantSched.Sub(t0), s.wantOK)
		}
	}
}

func TestPacerUnlimited(t *testing.T) {
	p := NewPacer(0, time.Now())
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3 {
		if sched, ok := p.Due(now); !ok || !sched.Equal(now) {
			t.Fatalf("emit %d: Due(now) = (%v, %v), want (now, true)", i, sched, ok)
		}
	}
	before := time.Now()
	sched, err := p.Next(context.Background())
	if err != nil || sched.Before(before) {
		t.Fatalf("Next() = (%v, %v), want (≥ %v, nil)", sched, err, before)
	}
}

func TestPacerNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := NewPacer(1000, start)
		for i := range 100 {
			sched, err := p.Next(t.Context())
			if err != nil {
				t.Fatalf("Next() #%d: %v", i, err)
			}
			want := start.Add(time.Duration(i) * time.Millisecond)
			if !sched.Equal(want) {
				t.Fatalf("Next() #%d scheduled at start+%v, want start+%v", i, sched.Sub(start), want.Sub(start))
			}
			if now := time.Now(); now.Before(sched) {
				t.Fatalf("Next() #%d returned at start+%v, before its schedule start+%v", i, now.Sub(start), sched.Sub(start))
			}
		}
		if got, want := time.Since(start), 99*time.Millisecond; got != want {
			t.Errorf("100 emits at 1000/s took %v, want %v", got, want)
		}
	})
}

func TestPacerNextCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := NewPacer(0.5, start) // one emit every 2s
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		if _, err := p.Next(ctx); err != nil {
			t.Fatalf("first Next() = %v, want nil (due at start)", err)
		}
		if _, err := p.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("second Next() = %v, want context.DeadlineExceeded", err)
		}
		if got, want := time.Since(start), 100*time.Millisecond; got != want {
			t.Errorf("cancelled Next returned after %v, want %v (when ctx was done)", got, want)
		}
		// The cancelled emit was not consumed.
		if sched, ok := p.Due(start.Add(2 * time.Second)); !ok || !sched.Equal(start.Add(2*time.Second)) {
			t.Errorf("Due(start+2s) after a cancelled Next = (start+%v, %v), want (start+2s, true)", sched.Sub(start), ok)
		}
	})
}
