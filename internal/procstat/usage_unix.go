//go:build unix

package procstat

import (
	"fmt"
	"runtime"
	"syscall"
	"time"
)

func getrusage(children bool) (Usage, error) {
	who, what := syscall.RUSAGE_SELF, "getrusage"
	if children {
		who, what = syscall.RUSAGE_CHILDREN, "getrusage children"
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return Usage{}, fmt.Errorf("%s: %w", what, err)
	}
	maxRSS := int64(ru.Maxrss)
	if runtime.GOOS != "darwin" && runtime.GOOS != "ios" {
		maxRSS *= 1024 // ru_maxrss is in KiB on Linux and the BSDs, bytes on Darwin
	}
	return Usage{CPU: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), MaxRSS: maxRSS}, nil
}
