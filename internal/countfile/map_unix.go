//go:build unix

package countfile

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// File is a mapped counter file. Its Counter pointers stay valid until
// Close.
type File struct {
	mem []byte
}

// Create writes l's sidecar (synced) and a zeroed data file for its
// slots at path, replacing any old pair, and maps the data file shared.
// The sidecar is written first, then the data file's header last, so a
// reader never takes a half-made pair for a whole one.
func Create(path string, l Layout) (*File, error) {
	if len(l.Slots) > MaxSlots {
		return nil, fmt.Errorf("countfile: %d slots, at most %d", len(l.Slots), MaxSlots)
	}
	l.Version = Version
	Remove(path)
	side, err := json.Marshal(l)
	if err != nil {
		return nil, err
	}
	if err := writeSynced(SidecarPath(path), side); err != nil {
		return nil, err
	}
	size := headerSize + slotSize*len(l.Slots)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := f.Truncate(int64(size)); err != nil {
		return nil, err
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("countfile: map %s: %w", path, err)
	}
	binary.LittleEndian.PutUint64(mem[8:], uint64(len(l.Slots)))
	binary.LittleEndian.PutUint64(mem, Magic)
	return &File{mem: mem}, nil
}

func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Counter is slot i's counter k (0 acked, 1 failed, 2 emitted, 3
// transferred), in the shared mapping: a store is in the page cache at
// once, so it outlives the process.
func (f *File) Counter(i, k int) *atomic.Int64 {
	return (*atomic.Int64)(unsafe.Pointer(&f.mem[headerSize+slotSize*i+8*k]))
}

// Close unmaps the file; the Counter pointers must not be used after.
func (f *File) Close() error { return unix.Munmap(f.mem) }
