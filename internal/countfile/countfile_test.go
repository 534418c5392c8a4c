//go:build unix

package countfile

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func layout() Layout {
	return Layout{Topology: "t-1", PID: 42, Assignment: 3, Fingerprint: "fp",
		Slots: []Slot{{Component: "a", FirstTask: 1}, {Component: "b", FirstTask: 4}}}
}

// TestRoundTrip: what the executors store is what Read returns, with
// the layout, after the mapping is gone too.
func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "counts")
	f, err := Create(path, layout())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		for k := range 4 {
			f.Counter(i, k).Store(int64(10*i + k + 1))
		}
	}
	f.Counter(1, 0).Add(100)
	want := []Counts{{1, 2, 3, 4}, {111, 12, 13, 14}}
	l, got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Read: %v, want %v", got, want)
	}
	wl := layout()
	wl.Version = Version
	if !reflect.DeepEqual(l, wl) {
		t.Errorf("layout: %+v, want %+v", l, wl)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, got, err := Read(path); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("after Close: %v, %v; want %v", got, err, want)
	}
	// A new worker on the slot starts from zero.
	f, err = Create(path, layout())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, got, err := Read(path); err != nil || !reflect.DeepEqual(got, make([]Counts, 2)) {
		t.Errorf("a new file: %v, %v; want zeros", got, err)
	}
	Remove(path)
	if _, _, err := Read(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after Remove: %v, want not-exist", err)
	}
}

// TestReadRejects: a missing, torn, mismatched or garbage pair is an
// error, never a panic nor counts.
func TestReadRejects(t *testing.T) {
	dir := t.TempDir()
	good := func(t *testing.T) string {
		path := filepath.Join(t.TempDir(), "counts")
		f, err := Create(path, layout())
		if err != nil {
			t.Fatal(err)
		}
		f.Counter(0, 0).Store(5)
		f.Close()
		return path
	}
	cases := map[string]func(t *testing.T, path string){
		"no sidecar": func(t *testing.T, path string) { os.Remove(SidecarPath(path)) },
		"no data":    func(t *testing.T, path string) { os.Remove(path) },
		"torn data":  func(t *testing.T, path string) { os.Truncate(path, headerSize+slotSize) },
		"empty data": func(t *testing.T, path string) { os.Truncate(path, 0) },
		"long data":  func(t *testing.T, path string) { os.Truncate(path, headerSize+3*slotSize) },
		"bad magic": func(t *testing.T, path string) {
			b, _ := os.ReadFile(path)
			b[0] ^= 0xff
			os.WriteFile(path, b, 0o600)
		},
		"slot count": func(t *testing.T, path string) {
			b, _ := os.ReadFile(path)
			binary.LittleEndian.PutUint64(b[8:], 3)
			os.WriteFile(path, b, 0o600)
		},
		"negative": func(t *testing.T, path string) {
			b, _ := os.ReadFile(path)
			binary.LittleEndian.PutUint64(b[headerSize+slotSize:], 1<<63)
			os.WriteFile(path, b, 0o600)
		},
		"garbage sidecar": func(t *testing.T, path string) { os.WriteFile(SidecarPath(path), []byte("{\"slots\":[1,"), 0o600) },
		"torn sidecar":    func(t *testing.T, path string) { os.Truncate(SidecarPath(path), 10) },
		"other version": func(t *testing.T, path string) {
			os.WriteFile(SidecarPath(path), []byte(`{"version":2,"slots":[{},{}]}`), 0o600)
		},
		"too many slots": func(t *testing.T, path string) {
			os.WriteFile(SidecarPath(path), []byte(`{"version":1,"slots":[`+manySlots()+`]}`), 0o600)
		},
		"other slot layout": func(t *testing.T, path string) {
			os.WriteFile(SidecarPath(path), []byte(`{"version":1,"slots":[{}]}`), 0o600)
		},
	}
	for name, mod := range cases {
		t.Run(name, func(t *testing.T) {
			path := good(t)
			mod(t, path)
			if l, c, err := Read(path); err == nil {
				t.Errorf("Read = %+v, %v, nil; want an error", l, c)
			}
		})
	}
	// Random bytes in either file: an error or, by chance, a consistent
	// pair; never a panic.
	rng := rand.New(rand.NewPCG(22, 1))
	path := filepath.Join(dir, "counts")
	for range 500 {
		side := make([]byte, rng.IntN(64))
		for i := range side {
			side[i] = byte(rng.IntN(256))
		}
		if rng.IntN(2) == 0 {
			side = []byte(`{"version":1,"slots":[{}]}`)
		}
		data := make([]byte, rng.IntN(3*slotSize))
		for i := range data {
			data[i] = byte(rng.IntN(256))
		}
		os.WriteFile(SidecarPath(path), side, 0o600)
		os.WriteFile(path, data, 0o600)
		Read(path)
	}
}

func manySlots() string {
	b := make([]byte, 0, 3*(MaxSlots+1))
	for i := range MaxSlots + 1 {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{', '}')
	}
	return string(b)
}
