//go:build !unix

package bench

import (
	"errors"
	"time"
)

func rusage() (cpu time.Duration, maxRSS int64, err error) {
	return 0, 0, errors.New("bench: cpu and rss measurement not supported on this platform")
}

// childrenCPU is not measured on this platform: worker processes add nothing to the
// CPU reported.
func childrenCPU() (time.Duration, error) { return 0, nil }
