//go:build !unix

package workerproc

import "time"

// selfCPU has no source outside unix: the caller estimates.
func selfCPU() (time.Duration, bool) { return 0, false }
