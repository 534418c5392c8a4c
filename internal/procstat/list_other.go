//go:build !unix

package procstat

import "fmt"

func list() ([]Process, error) { return nil, fmt.Errorf("list processes: %w", ErrUnsupported) }
