//go:build !unix

package countfile

import "sync/atomic"

// File is a mapped counter file; there is none on this system.
type File struct{}

// Create returns ErrUnsupported: there is no shared mapping here.
func Create(path string, l Layout) (*File, error) { return nil, ErrUnsupported }

// Counter is never called: Create returns no File.
func (f *File) Counter(i, k int) *atomic.Int64 { return nil }

// Close does nothing.
func (f *File) Close() error { return nil }
