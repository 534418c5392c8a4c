//go:build !unix

package proclist

func list() ([]Proc, error) { return nil, ErrUnsupported }
