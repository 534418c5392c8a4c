//go:build !linux

package procstat

// There is no /proc here.

func rss() (int64, error)           { return 0, ErrUnsupported }
func cpuTicks(int) (int64, error)   { return 0, ErrUnsupported }
func cmdline(int) ([]string, error) { return nil, ErrUnsupported }
