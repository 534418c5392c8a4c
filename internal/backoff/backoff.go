// Package backoff is the one exponential backoff of Gale's own retry
// loops: reconnecting to a peer worker, to etcd, to a supervisor's
// control socket, to a JetStream server, and retrying an artifact
// download. (A topology's failed messages have their own policy, with
// jitter and attempts: package retry.)
package backoff

import "time"

// Doubling waits Min before the first retry and twice as long before
// each one after, up to Max.
type Doubling struct {
	Min, Max time.Duration
}

// Delay is the wait before retry n, counting from 1: Min × 2^(n−1),
// capped at Max (and at least Min). n below 1 counts as 1; a Min of 0
// or less waits nothing.
func (d Doubling) Delay(n int) time.Duration {
	if d.Min <= 0 {
		return 0
	}
	w := d.Min
	for i := 1; i < n && w < d.Max; i++ {
		w *= 2
	}
	return min(w, max(d.Max, d.Min))
}
