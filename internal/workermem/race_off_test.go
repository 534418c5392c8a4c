//go:build !race

package workermem

const raceEnabled = false
