package workermem

import "golang.org/x/sys/unix"

// populate has the kernel fault in every page of b, writable, as writing
// to each would, in one call; it reports whether it did. The kernel
// neither reads nor changes b's contents. MADV_POPULATE_WRITE needs
// Linux 5.14; an older kernel says EINVAL. In a race build the race
// detector's shadow of those pages still faults in as the heap is
// written.
func populate(b []byte) bool {
	return unix.Madvise(b, unix.MADV_POPULATE_WRITE) == nil
}
