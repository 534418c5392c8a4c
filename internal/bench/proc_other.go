//go:build !unix

package bench

import (
	"errors"
	"time"
)

func rusage() (cpu time.Duration, maxRSS int64, err error) {
	return 0, 0, errors.New("bench: cpu and rss measurement not supported on this platform")
}
