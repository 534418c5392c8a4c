package retry

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sync"
	"time"
)

// DeadLetter is a message given up, with why: what a person needs to look
// at it, fix the cause and replay it.
type DeadLetter struct {
	// Source names where the message came from, in the connector's
	// words: "kafka:orders/3@1207", "jetstream:ORDERS/orders.new#88".
	Source  string  `json:"source"`
	Key     []byte  `json:"key,omitempty"` // base64 in JSON
	Value   []byte  `json:"value"`         // base64 in JSON
	Headers Headers `json:"headers,omitempty"`

	Topology  string `json:"topology,omitempty"`
	Component string `json:"component,omitempty"`

	Attempts    int       `json:"attempts"`   // deliveries, the first included
	Class       string    `json:"class"`      // of the last failure: transient, delayable, permanent
	LastError   string    `json:"last_error"` // the last failure's reason
	FirstFailed time.Time `json:"first_failed,omitzero"`
	GaveUp      time.Time `json:"gave_up"`
}

// Header is one header of a message: a key and a value of bytes, as Kafka
// record headers and NATS headers are. A nil Value is a null header (Kafka
// allows one, NATS has none); an empty non-nil Value is a header whose
// value is empty. In JSON it is {"key": "...", "value": "base64"}, with
// "value": null for a null header.
type Header struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// Headers are a message's headers, in their order, a key as many times as
// the message has it: a Kafka record's headers, one for one; a NATS
// message's, each key's values in order, the keys sorted (nats.Header is
// a map, whose keys have no order).
type Headers []Header

// Values returns the values of key, in order; nil if it has none.
func (h Headers) Values(key string) [][]byte {
	var out [][]byte
	for _, x := range h {
		if x.Key == key {
			out = append(out, x.Value)
		}
	}
	return out
}

// UnmarshalJSON reads the list Headers are written as, and also the
// object of strings that dead letters had before (one value a key: the
// map[string]string of Gale ≤ 9219985), sorted by key, each value the
// string's bytes.
func (h *Headers) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '{' {
		var old map[string]string
		if err := json.Unmarshal(b, &old); err != nil {
			return fmt.Errorf("dead-letter headers: %w", err)
		}
		out := make(Headers, 0, len(old))
		for _, k := range slices.Sorted(maps.Keys(old)) {
			out = append(out, Header{Key: k, Value: []byte(old[k])})
		}
		*h = out
		return nil
	}
	var list []Header
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("dead-letter headers: %w", err)
	}
	*h = list
	return nil
}

// DeadLetterSink is where a spout sends the messages it gives up. Send
// returns only once the letter is stored durably (or fails); a spout
// acks or commits the message at its source after that. A sink is safe
// for concurrent use.
type DeadLetterSink interface {
	Send(ctx context.Context, l DeadLetter) error
	Close() error
}

// BatchSink is a DeadLetterSink that stores many letters at once: a spout
// whose sink implements it sends every letter waiting in one call, so that
// a failure storm costs a write (an fsync, a produce round trip) per batch
// rather than per letter. SendBatch returns nil only once every letter is
// stored durably; on an error, some may be stored, and the caller sends
// them all again (a letter may then be stored twice, never lost).
type BatchSink interface {
	DeadLetterSink
	SendBatch(ctx context.Context, ls []DeadLetter) error
}

// SendAll sends ls to sink: in one SendBatch if it implements BatchSink,
// else one Send each, in order, stopping at the first error.
func SendAll(ctx context.Context, sink DeadLetterSink, ls []DeadLetter) error {
	if len(ls) == 0 {
		return nil
	}
	if b, ok := sink.(BatchSink); ok {
		return b.SendBatch(ctx, ls)
	}
	for _, l := range ls {
		if err := sink.Send(ctx, l); err != nil {
			return err
		}
	}
	return nil
}

// FileSink appends dead letters to a file, one JSON document per line
// (JSONL), and syncs each to disk before Send returns, so the letters
// outlive a crash or a restart of the machine. Keys, values and header
// values are bytes, in base64; see DeadLetter and Header. It is a
// BatchSink: SendBatch writes many letters with one sync.
type FileSink struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

// OpenFile opens (creating it if need be) the JSONL file at path for
// appending. A last line cut short by a crash is ended first, so the
// letters after it stay readable.
func OpenFile(path string) (*FileSink, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("dead-letter file: %w", err)
	}
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err != nil {
			f.Close()
			return nil, fmt.Errorf("dead-letter file %s: %w", path, err)
		}
		if last[0] != '\n' {
			if _, err := f.Write([]byte{'\n'}); err != nil {
				f.Close()
				return nil, fmt.Errorf("dead-letter file %s: ending a torn last line: %w", path, err)
			}
		}
	}
	return &FileSink{path: path, f: f}, nil
}

// Path is the file's path.
func (s *FileSink) Path() string { return s.path }

// Send appends l and syncs the file. On an error (a full disk) the
// letter may be partly written; the caller keeps the message and sends
// it again, and readers skip the torn line.
func (s *FileSink) Send(ctx context.Context, l DeadLetter) error {
	return s.SendBatch(ctx, []DeadLetter{l})
}

// SendBatch appends ls, a line each, in one write, and syncs the file
// once (BatchSink). On an error some may be written, the last perhaps
// torn; the caller sends them all again.
func (s *FileSink) SendBatch(_ context.Context, ls []DeadLetter) error {
	var b []byte
	for _, l := range ls {
		j, err := json.Marshal(l)
		if err != nil {
			return fmt.Errorf("dead letter from %s: %w", l.Source, err)
		}
		b = append(append(b, j...), '\n')
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return fmt.Errorf("dead-letter file %s: closed", s.path)
	}
	if _, err := s.f.Write(b); err != nil {
		// End whatever part was written, so the next letter starts a
		// line of its own; if that fails too, the reader skips it.
		s.f.Write([]byte{'\n'})
		return fmt.Errorf("dead-letter file %s: %w", s.path, err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("dead-letter file %s: sync: %w", s.path, err)
	}
	return nil
}

// Close closes the file.
func (s *FileSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

// ReadFile reads the dead letters in a JSONL file written by FileSink.
// Lines that are not a whole letter (torn by a crash or a full disk) are
// skipped and counted in the error returned with the letters, which
// names the first of them.
func ReadFile(path string) ([]DeadLetter, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLetters(f, path)
}

func readLetters(r io.Reader, name string) ([]DeadLetter, error) {
	var (
		out      []DeadLetter
		bad      int
		firstBad int
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var l DeadLetter
		if err := json.Unmarshal(b, &l); err != nil {
			if bad++; bad == 1 {
				firstBad = line
			}
			continue
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("%s: %w", name, err)
	}
	if bad > 0 {
		return out, fmt.Errorf("%s: %d torn or malformed lines skipped, the first at line %d: %w", name, bad, firstBad, ErrTornLines)
	}
	return out, nil
}

// ErrTornLines is wrapped by ReadFile's error when it skipped lines.
var ErrTornLines = errors.New("dead-letter lines skipped")
var _ BatchSink = (*FileSink)(nil)
