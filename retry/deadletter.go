package retry

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// DeadLetter is a message given up, with why: what a person needs to look
// at it, fix the cause and replay it.
type DeadLetter struct {
	// Source names where the message came from, in the connector's
	// words: "kafka:orders/3@1207", "jetstream:ORDERS/orders.new#88".
	Source  string            `json:"source"`
	Key     []byte            `json:"key,omitempty"` // base64 in JSON
	Value   []byte            `json:"value"`         // base64 in JSON
	Headers map[string]string `json:"headers,omitempty"`

	Topology  string `json:"topology,omitempty"`
	Component string `json:"component,omitempty"`

	Attempts    int       `json:"attempts"`   // deliveries, the first included
	Class       string    `json:"class"`      // of the last failure: transient, delayable, permanent
	LastError   string    `json:"last_error"` // the last failure's reason
	FirstFailed time.Time `json:"first_failed,omitzero"`
	GaveUp      time.Time `json:"gave_up"`
}

// DeadLetterSink is where a spout sends the messages it gives up. Send
// returns only once the letter is stored durably (or fails); a spout
// acks or commits the message at its source after that. A sink is safe
// for concurrent use.
type DeadLetterSink interface {
	Send(ctx context.Context, l DeadLetter) error
	Close() error
}

// FileSink appends dead letters to a file, one JSON document per line
// (JSONL), and syncs each to disk before Send returns, so the letters
// outlive a crash or a restart of the machine.
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
func (s *FileSink) Send(_ context.Context, l DeadLetter) error {
	b, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("dead letter from %s: %w", l.Source, err)
	}
	b = append(b, '\n')
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
