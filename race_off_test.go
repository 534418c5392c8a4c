//go:build !race

package gale_test

const raceEnabled = false
