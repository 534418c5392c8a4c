//go:build !linux

package workermem

// populate reports that this OS cannot fault b's pages in for the
// caller, which then writes to each.
func populate([]byte) bool { return false }
