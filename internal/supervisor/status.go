package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/gale-stream/gale/internal/nimbuspb"
)

// StatusSocket is the unix socket under a supervisor's directory that
// serves its latest report of its workers, as it sends it to the nimbus
// leader (ReadStatus): what runs on this machine and how much it has
// acked, readable here when etcd or nimbus cannot be reached.
func StatusSocket(dir string) string { return filepath.Join(dir, "status.sock") }

// statusJSON is how the status socket writes a report.
var statusJSON = protojson.MarshalOptions{UseProtoNames: true}

// setStatus makes r the report the status socket serves.
func (s *Supervisor) setStatus(r *nimbuspb.ReportRequest) {
	b, err := statusJSON.Marshal(r)
	if err != nil {
		s.log.Error("marshal the status", "err", err)
		return
	}
	s.status.Store(&b)
}

// serveStatus answers each connection on ln with the latest report, as
// JSON, and closes it. It returns when ln is closed.
func (s *Supervisor) serveStatus(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.SetWriteDeadline(time.Now().Add(time.Second))
		if b := s.status.Load(); b != nil {
			c.Write(*b)
		}
		c.Close()
	}
}

// ReadStatus asks the supervisor running in dir for its latest report
// of its workers (refreshed every supervisor.heartbeat.frequency.secs).
func ReadStatus(ctx context.Context, dir string) (*nimbuspb.ReportRequest, error) {
	sock := StatusSocket(dir)
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return nil, fmt.Errorf("supervisor: no supervisor answers on %s (is one running with --dir %s?): %w", sock, dir, err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetReadDeadline(dl)
	}
	b, err := io.ReadAll(io.LimitReader(c, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("supervisor: read the status from %s: %w", sock, err)
	}
	if len(b) == 0 {
		return nil, errors.New("supervisor: the status on " + sock + " is empty")
	}
	var r nimbuspb.ReportRequest
	if err := protojson.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("supervisor: the status from %s: %w", sock, err)
	}
	return &r, nil
}
