package supervisor

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// localState is what a supervisor keeps in DIR/state.json: the workers
// it runs, so that a restarted supervisor adopts them.
type localState struct {
	Supervisor string      `json:"supervisor"`
	Workers    []savedProc `json:"workers"`
}

// savedProc is one worker of the local state.
type savedProc struct {
	Port       int       `json:"port"`
	PID        int       `json:"pid"`
	Topology   string    `json:"topology"`
	Version    int64     `json:"version"`
	LaunchedAt time.Time `json:"launched_at"`
	// Spec is the worker's spec file: its command line names it, which
	// tells the worker from another process that reuses its pid.
	Spec string `json:"spec"`
	// Running is what it runs (Observed.Running).
	Running Desired `json:"running"`
	// Restarts is how often its slot's worker of its topology was
	// restarted (slotRestarts).
	Restarts int `json:"restarts,omitempty"`
}

func readState(path string) (localState, error) {
	var st localState
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("supervisor: local state %s: %w (move it away to start afresh; its workers are then not adopted)", path, err)
	}
	return st, nil
}

// writeFileAtomic writes b to path through a temporary file renamed over
// it: a reader sees the old content or the new, never a part.
func writeFileAtomic(path string, b []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing there
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// LoadID returns the supervisor id kept in dir (DIR/id), storing one on
// first use: flagID if set, else a new one made from host. A flagID that
// differs from the stored id is an error: the id belongs to the
// directory, whose state names its workers.
func LoadID(dir, flagID, host string) (string, error) {
	path := filepath.Join(dir, "id")
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		id := strings.TrimSpace(string(b))
		if id == "" {
			return "", fmt.Errorf("supervisor: %s is empty: write the supervisor's id in it, or remove it", path)
		}
		if flagID != "" && flagID != id {
			return "", fmt.Errorf("supervisor: --id %q, but %s is supervisor %q's: use another --dir for another supervisor", flagID, dir, id)
		}
		return id, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", err
	}
	id := flagID
	if id == "" {
		var r [4]byte
		rand.Read(r[:])
		id = strings.NewReplacer(".", "-", ":", "-").Replace(host) + "-" + hex.EncodeToString(r[:])
	}
	if strings.ContainsAny(id, "/ \t\n") {
		return "", fmt.Errorf("supervisor: id %q: use no '/' or spaces", id)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := writeFileAtomic(path, []byte(id+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("supervisor: store the id: %w", err)
	}
	return id, nil
}
