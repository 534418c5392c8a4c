//go:build race

package workermem

// raceEnabled: the race detector's shadow memory takes page faults of its
// own, which tests that count faults allow for.
const raceEnabled = true
