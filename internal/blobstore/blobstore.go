// Package blobstore keeps topology artifacts on local disk, one file per
// artifact named by its SHA-256 (lowercase hex), the key. Nimbus stores
// what is submitted and what it replicates from other nimbuses here, and
// serves downloads from it.
//
// Put writes to a temporary file in the store's directory, hashing and
// counting as it writes, and renames it into place only once the size and
// the SHA-256 match what the caller expected: a failed, partial or
// oversized upload leaves nothing behind, and a file under its key always
// held the right bytes when it was written. Open hashes as the caller
// reads, so a file corrupted on disk since is an error at the end of the
// read rather than bytes passed on as good.
//
// A Store is safe for concurrent use, by goroutines and by processes
// sharing the directory: two Puts of one key both write the same bytes,
// and the rename that lands last wins.
package blobstore

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Errors returned, wrapped with the key and what happened, by the Store's
// methods. Compare with errors.Is.
var (
	// ErrNotFound: no artifact under the key.
	ErrNotFound = errors.New("blobstore: artifact not found")
	// ErrInvalidKey: the key is not a SHA-256 in lowercase hex.
	ErrInvalidKey = errors.New("blobstore: invalid key")
	// ErrTooLarge: the artifact is larger than the store's limit.
	ErrTooLarge = errors.New("blobstore: artifact too large")
	// ErrMismatch: the bytes put do not have the expected size or SHA-256.
	ErrMismatch = errors.New("blobstore: artifact does not match")
	// ErrCorrupt: a stored file's bytes no longer hash to its key.
	ErrCorrupt = errors.New("blobstore: artifact corrupt on disk")
)

// tempPrefix starts the names of files being written; List skips them and
// Open removes those a crashed writer left.
const tempPrefix = ".tmp-"

// Store is a directory of artifacts.
type Store struct {
	dir   string
	limit int64
	// createTemp makes the temporary file a Put writes to; tests replace
	// it to make writes fail as a full disk does.
	createTemp func(dir, pattern string) (tempFile, error)
}

// tempFile is what Put needs of the file it writes.
type tempFile interface {
	io.Writer
	Sync() error
	Close() error
	Name() string
}

// Open opens the store in dir, creating dir if needed, and removes the
// temporary files of Puts that a crash interrupted. Artifacts larger than
// limit bytes (> 0) are refused.
func Open(dir string, limit int64) (*Store, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("blobstore: size limit must be > 0, got %d", limit)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("blobstore: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("blobstore: %w", err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("blobstore: remove an interrupted upload: %w", err)
			}
		}
	}
	return &Store{
		dir:   dir,
		limit: limit,
		createTemp: func(dir, pattern string) (tempFile, error) {
			return os.CreateTemp(dir, pattern)
		},
	}, nil
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// Limit is the largest artifact the store accepts, in bytes.
func (s *Store) Limit() int64 { return s.limit }

// ValidKey reports whether key is a SHA-256 in lowercase hex.
func ValidKey(key string) bool {
	if len(key) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func checkKey(key string) error {
	if !ValidKey(key) {
		return fmt.Errorf("%w %q: want a SHA-256 of 64 lowercase hex digits", ErrInvalidKey, key)
	}
	return nil
}

// path is where key's artifact lives.
func (s *Store) path(key string) string { return filepath.Join(s.dir, key) }

// Put stores the artifact read from r under key, its expected SHA-256,
// which must be size bytes long (0 < size ≤ the limit). It reads r to the
// end, but never more than size+1 bytes nor more than the limit: an upload
// longer than either stops there with ErrTooLarge or ErrMismatch. Nothing
// is stored unless the bytes are exactly size long and hash to key; then
// the artifact is synced to disk and renamed into place. A key already
// stored is stored again (the bytes are the same). Put does not close r.
func (s *Store) Put(key string, size int64, r io.Reader) (err error) {
	if err := checkKey(key); err != nil {
		return err
	}
	if size <= 0 {
		return fmt.Errorf("%w: artifact %s: size must be > 0, got %d", ErrMismatch, key, size)
	}
	if size > s.limit {
		return s.tooLarge(key, fmt.Sprintf("its size is %d bytes", size))
	}
	f, err := s.createTemp(s.dir, tempPrefix+key[:16]+"-")
	if err != nil {
		return fmt.Errorf("blobstore: artifact %s: %w", key, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	h := sha256.New()
	// One byte past the size shows an upload that is too long, without
	// reading the rest of it.
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(r, size+1))
	switch {
	case err != nil:
		return fmt.Errorf("blobstore: artifact %s: after %d bytes: %w", key, n, err)
	case n > s.limit:
		return s.tooLarge(key, "the upload went on past it")
	case n > size:
		return fmt.Errorf("%w: artifact %s is longer than its declared %d bytes", ErrMismatch, key, size)
	case n < size:
		return fmt.Errorf("%w: artifact %s: got %d bytes, want %d", ErrMismatch, key, n, size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != key {
		return fmt.Errorf("%w: the %d bytes uploaded as %s have SHA-256 %s", ErrMismatch, n, key, got)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("blobstore: artifact %s: %w", key, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("blobstore: artifact %s: %w", key, err)
	}
	if err := os.Rename(f.Name(), s.path(key)); err != nil {
		return fmt.Errorf("blobstore: artifact %s: %w", key, err)
	}
	syncDir(s.dir)
	return nil
}

func (s *Store) tooLarge(key, what string) error {
	return fmt.Errorf("%w: artifact %s: %s, over the limit of %d bytes (%d MiB, nimbus.artifact.max.mb)",
		ErrTooLarge, key, what, s.limit, s.limit>>20)
}

// syncDir makes a rename in dir durable where the platform allows it; a
// failure only risks losing the rename in a power cut, which the
// replication between nimbuses repairs.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	d.Sync()
	d.Close()
}

// Has reports whether an artifact is stored under key. It does not read
// the artifact.
func (s *Store) Has(key string) bool {
	if !ValidKey(key) {
		return false
	}
	fi, err := os.Stat(s.path(key))
	return err == nil && fi.Mode().IsRegular()
}

// Reader reads a stored artifact and checks, at the end, that what it
// read hashes to its key.
type Reader struct {
	key  string
	f    *os.File
	size int64
	h    hash.Hash
	n    int64
}

// Open opens the artifact under key for reading. The error wraps
// ErrNotFound when there is none.
func (s *Store) Open(key string) (*Reader, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	f, err := os.Open(s.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s in %s", ErrNotFound, key, s.dir)
	}
	if err != nil {
		return nil, fmt.Errorf("blobstore: artifact %s: %w", key, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("blobstore: artifact %s: %w", key, err)
	}
	return &Reader{key: key, f: f, size: fi.Size(), h: sha256.New()}, nil
}

// Size is the artifact's size in bytes, as stored.
func (r *Reader) Size() int64 { return r.size }

// Read reads the artifact. At the end of the file it returns io.EOF if
// the bytes read hash to the key, and an error wrapping ErrCorrupt if they
// do not (a caller that stops early checks nothing).
func (r *Reader) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	r.h.Write(p[:n])
	r.n += int64(n)
	if err == io.EOF {
		if got := hex.EncodeToString(r.h.Sum(nil)); got != r.key {
			return n, fmt.Errorf("%w: %s holds %d bytes with SHA-256 %s; delete it and replicate it again",
				ErrCorrupt, r.f.Name(), r.n, got)
		}
	}
	return n, err
}

// Close closes the file.
func (r *Reader) Close() error { return r.f.Close() }

// Verify reads the whole artifact under key and checks its hash: nil, or
// an error wrapping ErrNotFound or ErrCorrupt.
func (s *Store) Verify(key string) error {
	r, err := s.Open(key)
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = io.Copy(io.Discard, r)
	return err
}

// Delete removes the artifact under key; deleting one that is not there
// is not an error.
func (s *Store) Delete(key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := os.Remove(s.path(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("blobstore: delete artifact %s: %w", key, err)
	}
	return nil
}

// List returns the keys stored, sorted. Files that are not artifacts
// (uploads in progress, anything else in the directory) are skipped.
func (s *Store) List() ([]string, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("blobstore: %w", err)
	}
	var keys []string
	for _, e := range entries {
		if e.Type().IsRegular() && ValidKey(e.Name()) {
			keys = append(keys, e.Name())
		}
	}
	slices.Sort(keys)
	return keys, nil
}
