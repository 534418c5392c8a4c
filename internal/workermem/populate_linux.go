//go:build linux && !race

package workermem

import "golang.org/x/sys/unix"

// populate has the kernel fault in every page of b, writable, as writing
// to each would, in one call; it reports whether it did. The kernel
// neither reads nor changes b's contents. MADV_POPULATE_WRITE needs
// Linux 5.14; an older kernel says EINVAL. A race build does without it
// (populate_other.go): the race detector's shadow of the heap faults in
// only as the heap is written.
func populate(b []byte) bool {
	return unix.Madvise(b, unix.MADV_POPULATE_WRITE) == nil
}
