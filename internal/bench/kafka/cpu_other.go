//go:build !unix

package kafka

import (
	"errors"
	"time"
)

// selfCPU is unsupported here: the bench reports no CPU times.
func selfCPU() (time.Duration, error) {
	return 0, errors.New("benchkafka: this process's CPU time is read with getrusage, on unix only")
}
