package supervisor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gale-stream/gale/internal/nimbuspb"
)

// artifactPath is where a verified artifact lives.
func (s *Supervisor) artifactPath(sha string) string {
	return filepath.Join(s.cfg.Dir, "artifacts", sha)
}

// localArtifacts lists the verified artifacts in the store: a file there
// is named by its checksum only once it has been checked. It removes the
// partial downloads a supervisor killed meanwhile left (".SHA256.*"): the
// caller holds the directory's lock, so no download is under way.
func localArtifacts(dir string) map[string]ArtifactState {
	arts := map[string]ArtifactState{}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		n := e.Name()
		switch {
		case len(n) == 64 && e.Type().IsRegular():
			if _, err := hex.DecodeString(n); err == nil {
				arts[n] = ArtifactState{Ready: true}
			}
		case len(n) > 66 && n[0] == '.' && n[65] == '.' && e.Type().IsRegular():
			if _, err := hex.DecodeString(n[1:65]); err == nil {
				os.Remove(filepath.Join(dir, n))
			}
		}
	}
	return arts
}

// deleteArtifact removes an unused artifact from the store (Step's
// DeleteArtifact). A removal that fails is logged once and tried again.
func (s *Supervisor) deleteArtifact(sha string, now time.Time) {
	a := s.arts[sha]
	if err := os.Remove(s.artifactPath(sha)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		if key := "rm " + sha; !s.logged[key] {
			s.logged[key] = true
			s.log.Error("cannot delete an unused artifact", "artifact", sha, "err", err)
		}
		return
	}
	delete(s.logged, "rm "+sha)
	delete(s.arts, sha)
	if a.Ready {
		s.log.Info("deleted an unused artifact", "artifact", sha, "unused_for", now.Sub(a.UnusedSince).Round(time.Second),
			"retention", s.cfg.ArtifactRetention)
	}
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
