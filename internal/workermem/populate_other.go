//go:build !linux || race

package workermem

// populate reports that it cannot fault b's pages in for the caller,
// which then writes to each: this OS has no MADV_POPULATE_WRITE, or this
// is a race build, whose detector keeps a shadow of the heap that only
// the writes fault in.
func populate([]byte) bool { return false }
