package wordcount

import (
	"time"

	"github.com/gale-stream/gale/internal/bench"
)

// SleepForBusyWork makes the count bolt sleep for its extra work instead
// of spinning, so that it takes time on testing/synctest's fake clock (a
// spin never ends there); it returns the function that undoes it.
func SleepForBusyWork() (restore func()) {
	busyWork = time.Sleep
	return func() { busyWork = bench.BusyWork }
}
