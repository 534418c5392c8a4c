// Package freeport finds TCP ports of 127.0.0.1 that are free at the
// moment, for the dev cluster's benchmarks and the end-to-end tests that
// start processes on ports of their own. A port found free may be taken
// by another process before it is bound: callers that can, retry.
package freeport

import (
	"fmt"
	"net"
	"strconv"
)

// Consecutive finds n consecutive ports of 127.0.0.1 that are free
// (bindable) now, and returns the first; it gives up after 100 tries.
func Consecutive(n int) (int, error) {
	if n < 1 {
		return 0, fmt.Errorf("freeport: %d ports asked for, want at least 1", n)
	}
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		base := ln.Addr().(*net.TCPAddr).Port
		lns := []net.Listener{ln}
		ok := base+n-1 <= 65535
		for p := base + 1; ok && p < base+n; p++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				ok = false
				break
			}
			lns = append(lns, l)
		}
		for _, l := range lns {
			l.Close()
		}
		if ok {
			return base, nil
		}
	}
	return 0, fmt.Errorf("freeport: no %d free consecutive ports on 127.0.0.1 in 100 tries", n)
}
