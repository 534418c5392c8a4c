// Package countfile keeps a supervised worker's spout counters where a
// kill -9 does not lose them: a small file in the worker's directory that
// the worker maps shared and its spout executors store into before the
// spout hears of an ack or fail, and that the supervisor reads when the
// worker's process has ended. A JSON sidecar, written and synced before
// the counters are used, says whose they are: the topology, the worker's
// pid and, per slot, the spout component and executor's first task.
//
// The data file is a 16-byte header (Magic, then the slot count, both
// little-endian uint64) and per slot four int64 counters: acked, failed,
// emitted, transferred. A torn, missing, mismatched or garbage pair of
// files is an error from Read, never a panic; the reader then has the
// heartbeat's counters only.
package countfile

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// Magic opens the data file; Version is the sidecar's layout version.
const (
	Magic   uint64 = 0x31746e636c616777 // "wglacnt1"
	Version        = 1
)

// headerSize and slotSize are the data file's header and slot sizes.
const (
	headerSize = 16
	slotSize   = 32
)

// MaxSlots bounds the slots a file holds (and Read accepts).
const MaxSlots = 1 << 16

// Slot is one spout executor's place in the file.
type Slot struct {
	Component string `json:"component"`
	FirstTask int    `json:"first_task"`
}

// Layout is the sidecar: whose counters the data file holds.
type Layout struct {
	Version     int    `json:"version"`
	Topology    string `json:"topology"`
	PID         int    `json:"pid"`
	Assignment  int64  `json:"assignment_version"`
	Fingerprint string `json:"fingerprint"`
	Slots       []Slot `json:"slots"`
}

// Counts are one slot's counters.
type Counts struct {
	Acked, Failed, Emitted, Transferred int64
}

// SidecarPath is the sidecar of data file path.
func SidecarPath(path string) string { return path + ".json" }

// Remove removes the data file at path and its sidecar.
func Remove(path string) {
	os.Remove(SidecarPath(path))
	os.Remove(path)
}

// Read reads the data file at path and its sidecar: the layout and each
// slot's counters, in the layout's order. Any inconsistency is an error.
func Read(path string) (Layout, []Counts, error) {
	var l Layout
	side, err := os.ReadFile(SidecarPath(path))
	if err != nil {
		return l, nil, err
	}
	if err := json.Unmarshal(side, &l); err != nil {
		return Layout{}, nil, fmt.Errorf("countfile: %s: %w", SidecarPath(path), err)
	}
	if l.Version != Version {
		return Layout{}, nil, fmt.Errorf("countfile: %s: version %d, want %d", SidecarPath(path), l.Version, Version)
	}
	if len(l.Slots) > MaxSlots {
		return Layout{}, nil, fmt.Errorf("countfile: %s: %d slots, at most %d", SidecarPath(path), len(l.Slots), MaxSlots)
	}
	f, err := os.Open(path)
	if err != nil {
		return Layout{}, nil, err
	}
	defer f.Close()
	want := int64(headerSize + slotSize*len(l.Slots))
	if st, err := f.Stat(); err != nil {
		return Layout{}, nil, err
	} else if st.Size() != want {
		return Layout{}, nil, fmt.Errorf("countfile: %s: %d bytes, the layout wants %d", path, st.Size(), want)
	}
	b := make([]byte, want)
	if _, err := f.ReadAt(b, 0); err != nil {
		return Layout{}, nil, fmt.Errorf("countfile: %s: %w", path, err)
	}
	if m := binary.LittleEndian.Uint64(b); m != Magic {
		return Layout{}, nil, fmt.Errorf("countfile: %s: not a counter file (magic %#x)", path, m)
	}
	if n := binary.LittleEndian.Uint64(b[8:]); n != uint64(len(l.Slots)) {
		return Layout{}, nil, fmt.Errorf("countfile: %s: %d slots, the layout has %d", path, n, len(l.Slots))
	}
	out := make([]Counts, len(l.Slots))
	for i := range out {
		o := headerSize + slotSize*i
		c := Counts{
			Acked:       int64(binary.LittleEndian.Uint64(b[o:])),
			Failed:      int64(binary.LittleEndian.Uint64(b[o+8:])),
			Emitted:     int64(binary.LittleEndian.Uint64(b[o+16:])),
			Transferred: int64(binary.LittleEndian.Uint64(b[o+24:])),
		}
		if c.Acked < 0 || c.Failed < 0 || c.Emitted < 0 || c.Transferred < 0 {
			return Layout{}, nil, fmt.Errorf("countfile: %s: slot %d has a negative counter", path, i)
		}
		out[i] = c
	}
	return l, out, nil
}

// ErrUnsupported is Create's error where files cannot be mapped.
var ErrUnsupported = errors.New("countfile: not supported on this system")
