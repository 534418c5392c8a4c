package blobstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func open(t *testing.T, limit int64) *Store {
	t.Helper()
	s, err := Open(t.TempDir(), limit)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

// dirNames lists every file in the store's directory, temporary ones
// included.
func dirNames(t *testing.T, s *Store) []string {
	t.Helper()
	entries, err := os.ReadDir(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func readAll(t *testing.T, s *Store, key string) ([]byte, error) {
	t.Helper()
	r, err := s.Open(key)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

func TestPutOpenRoundTrip(t *testing.T) {
	s := open(t, 1<<20)
	data := bytes.Repeat([]byte("gale artifact "), 5000)
	key := sum(data)
	if s.Has(key) {
		t.Fatalf("Has(%s) before Put: got true", key)
	}
	if err := s.Put(key, int64(len(data)), bytes.NewReader(data)); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if !s.Has(key) {
		t.Fatalf("Has(%s) after Put: got false", key)
	}
	got, err := readAll(t, s, key)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes, want the %d put", len(got), len(data))
	}
	if err := s.Verify(key); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	keys, err := s.List()
	if err != nil || !slices.Equal(keys, []string{key}) {
		t.Fatalf("List: got %v, %v; want [%s]", keys, err, key)
	}
	if names := dirNames(t, s); !slices.Equal(names, []string{key}) {
		t.Fatalf("directory holds %v, want only %s", names, key)
	}
	if err := s.Delete(key); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if s.Has(key) {
		t.Fatal("Has after Delete: got true")
	}
	if _, err := s.Open(key); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Open after Delete: got %v, want ErrNotFound", err)
	}
	if err := s.Delete(key); err != nil {
		t.Fatalf("Delete of a deleted key: got %v, want nil", err)
	}
}

// endless is a reader that never ends, counting what it hands out.
type endless struct{ n int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	e.n += int64(len(p))
	return len(p), nil
}

func TestPutRefusesAndLeavesNothing(t *testing.T) {
	data := []byte("the real artifact")
	key := sum(data)
	tests := []struct {
		name     string
		key      string
		size     int64
		r        io.Reader
		want     error
		wantText []string
	}{
		{"wrong hash", sum([]byte("another")), int64(len(data)), bytes.NewReader(data), ErrMismatch, []string{"SHA-256 " + key}},
		{"shorter than declared", key, int64(len(data)) + 5, bytes.NewReader(data), ErrMismatch, []string{"got 17 bytes, want 22"}},
		{"longer than declared", key, int64(len(data)) - 1, bytes.NewReader(data), ErrMismatch, []string{"longer than its declared 16 bytes"}},
		{"declared over the limit", key, 1025, bytes.NewReader(data), ErrTooLarge, []string{key, "1024 bytes", "nimbus.artifact.max.mb"}},
		{"endless upload at the limit", key, 1024, &endless{}, ErrTooLarge, []string{key, "1024 bytes", "nimbus.artifact.max.mb"}},
		{"size zero", key, 0, bytes.NewReader(nil), ErrMismatch, []string{"must be > 0"}},
		{"bad key", "../../etc/passwd", 4, strings.NewReader("root"), ErrInvalidKey, []string{"64 lowercase hex"}},
		{"upper-case key", strings.ToUpper(key), int64(len(data)), bytes.NewReader(data), ErrInvalidKey, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t, 1024)
			err := s.Put(tt.key, tt.size, tt.r)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Put: got %v, want %v", err, tt.want)
			}
			for _, w := range tt.wantText {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if names := dirNames(t, s); len(names) != 0 {
				t.Fatalf("a refused Put left %v", names)
			}
			if e, ok := tt.r.(*endless); ok && e.n > 1024+64<<10 {
				t.Fatalf("an endless upload was read for %d bytes past the limit", e.n-1024)
			}
		})
	}
}

// failingFile is a temporary file whose writes fail, as on a full disk,
// once it holds room bytes.
type failingFile struct {
	*os.File
	room int
}

func (f *failingFile) Write(p []byte) (int, error) {
	if len(p) > f.room {
		n, _ := f.File.Write(p[:f.room])
		f.room = 0
		return n, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	f.room -= len(p)
	return f.File.Write(p)
}

func TestPutFullDiskLeavesNoFile(t *testing.T) {
	s := open(t, 1<<20)
	s.createTemp = func(dir, pattern string) (tempFile, error) {
		f, err := os.CreateTemp(dir, pattern)
		if err != nil {
			return nil, err
		}
		return &failingFile{File: f, room: 1000}, nil
	}
	data := bytes.Repeat([]byte{7}, 64<<10)
	key := sum(data)
	err := s.Put(key, int64(len(data)), bytes.NewReader(data))
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Put on a full disk: got %v, want ENOSPC", err)
	}
	if !strings.Contains(err.Error(), key) {
		t.Errorf("error %q does not name the artifact %s", err, key)
	}
	if names := dirNames(t, s); len(names) != 0 {
		t.Fatalf("a failed Put left %v", names)
	}
	if s.Has(key) {
		t.Fatal("Has after a failed Put: got true")
	}
}

func TestPutReadErrorLeavesNoFile(t *testing.T) {
	s := open(t, 1<<20)
	data := bytes.Repeat([]byte{1}, 4096)
	key := sum(data)
	cut := errors.New("connection reset")
	r := io.MultiReader(bytes.NewReader(data[:100]), &errReader{cut})
	if err := s.Put(key, int64(len(data)), r); !errors.Is(err, cut) {
		t.Fatalf("Put of a broken upload: got %v, want %v", err, cut)
	}
	if names := dirNames(t, s); len(names) != 0 {
		t.Fatalf("a broken upload left %v", names)
	}
}

type errReader struct{ err error }

func (e *errReader) Read([]byte) (int, error) { return 0, e.err }

func TestCorruptFileIsAnErrorOnRead(t *testing.T) {
	s := open(t, 1<<20)
	data := bytes.Repeat([]byte("abc"), 1000)
	key := sum(data)
	if err := s.Put(key, int64(len(data)), bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	bad := slices.Clone(data)
	bad[1234] ^= 0xff
	if err := os.WriteFile(filepath.Join(s.Dir(), key), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readAll(t, s, key); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("reading a corrupted artifact: got %v, want ErrCorrupt", err)
	}
	if err := s.Verify(key); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Verify of a corrupted artifact: got %v, want ErrCorrupt", err)
	}
	// A truncated file is corrupt too.
	if err := os.WriteFile(filepath.Join(s.Dir(), key), data[:10], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Verify(key); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Verify of a truncated artifact: got %v, want ErrCorrupt", err)
	}
}

func TestOpenRemovesInterruptedUploads(t *testing.T) {
	dir := t.TempDir()
	data := []byte("kept")
	key := sum(data)
	s, err := Open(dir, 1024)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(key, int64(len(data)), bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	leftover := filepath.Join(dir, tempPrefix+"0123456789abcdef-42")
	if err := os.WriteFile(leftover, []byte("half an upl"), 0o644); err != nil {
		t.Fatal(err)
	}
	if keys, _ := s.List(); !slices.Equal(keys, []string{key}) {
		t.Fatalf("List with an upload in progress: got %v, want [%s]", keys, key)
	}
	if _, err := Open(dir, 1024); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Fatalf("reopening left the interrupted upload: %v", err)
	}
	if !s.Has(key) {
		t.Fatal("reopening removed a stored artifact")
	}
}
