package supervisor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gale-stream/gale/internal/nimbuspb"
)

// artifactPath is where a verified artifact lives.
func (s *Supervisor) artifactPath(sha string) string {
	return filepath.Join(s.cfg.Dir, "artifacts", sha)
}

// localArtifacts lists the verified artifacts in the store: a file there
// is named by its checksum only once it has been checked.
func localArtifacts(dir string) map[string]ArtifactState {
	arts := map[string]ArtifactState{}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if n := e.Name(); len(n) == 64 && e.Type().IsRegular() {
			if _, err := hex.DecodeString(n); err == nil {
				arts[n] = ArtifactState{Ready: true}
			}
		}
	}
	return arts
}

// ErrArtifact is wrapped by the errors of a download that delivered
// something other than the artifact asked for.
var ErrArtifact = errors.New("supervisor: bad artifact")

// download fetches artifact a from the nimbus leader, checks its size and
// SHA-256 and stores it, executable, under its checksum.
func (s *Supervisor) download(ctx context.Context, a Artifact) error {
	if len(a.SHA256) != 64 {
		return fmt.Errorf("%w: checksum %q is not a SHA-256 in hex", ErrArtifact, a.SHA256)
	}
	if _, err := hex.DecodeString(a.SHA256); err != nil {
		return fmt.Errorf("%w: checksum %q is not a SHA-256 in hex", ErrArtifact, a.SHA256)
	}
	client, addr, err := s.nimbus.client(ctx)
	if err != nil {
		return err
	}
	stream, err := client.Download(ctx, &nimbuspb.DownloadRequest{Sha256: a.SHA256})
	if err != nil {
		s.nimbus.failed(addr)
		return fmt.Errorf("download artifact %s from nimbus %s: %w", short(a.SHA256), addr, err)
	}
	dir := filepath.Join(s.cfg.Dir, "artifacts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+a.SHA256+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing there
	defer tmp.Close()
	h := sha256.New()
	var n int64
	for {
		c, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("download artifact %s from nimbus %s: %w", short(a.SHA256), addr, err)
		}
		n += int64(len(c.Data))
		if n > a.Size {
			return fmt.Errorf("%w: artifact %s from nimbus %s is longer than its recorded %d bytes", ErrArtifact, short(a.SHA256), addr, a.Size)
		}
		h.Write(c.Data)
		if _, err := tmp.Write(c.Data); err != nil {
			return err
		}
	}
	if n != a.Size {
		return fmt.Errorf("%w: artifact %s from nimbus %s has %d bytes, its record says %d", ErrArtifact, short(a.SHA256), addr, n, a.Size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != a.SHA256 {
		return fmt.Errorf("%w: artifact %s from nimbus %s has SHA-256 %s", ErrArtifact, short(a.SHA256), addr, got)
	}
	if err := tmp.Chmod(0o755); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), s.artifactPath(a.SHA256))
}
