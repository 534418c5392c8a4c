//go:build !unix

package procstat

import "fmt"

func getrusage(children bool) (Usage, error) {
	if children {
		return Usage{}, fmt.Errorf("getrusage children: %w", ErrUnsupported)
	}
	return Usage{}, fmt.Errorf("getrusage: %w", ErrUnsupported)
}
