package nimbus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/blobstore"
	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/nimbuspb"
	"github.com/gale-stream/gale/internal/plan"
)

// Submission statuses in SubmitResponse.
const (
	submitActive  = "ACTIVE"
	submitPending = "PENDING"
)

// Submit validates a submission, stores its artifact, waits for
// topology.min.replication.count nimbuses to hold it (at most
// topology.max.replication.wait.time.sec), then records the topology
// and schedules it. Nothing reaches etcd before the whole submission is
// valid and its artifact stored.
func (a *api) Submit(stream nimbuspb.Nimbus_SubmitServer) error {
	ctx, cancel := a.callCtx(stream.Context())
	defer cancel()
	n := a.n
	if err := n.mustLead(ctx); err != nil {
		return err
	}
	first, err := stream.Recv()
	if err == io.EOF {
		return status.Error(codes.InvalidArgument, "nimbus: empty submission: send the header first, then the artifact's bytes")
	}
	if err != nil {
		return err
	}
	h := first.GetHeader()
	if h == nil {
		return status.Error(codes.InvalidArgument, "nimbus: a submission starts with its header (name, definition, config, artifact), not with artifact bytes")
	}
	t, err := n.checkSubmission(ctx, h)
	if err != nil {
		return err
	}
	sha := t.Artifact.SHA256
	created := false
	defer func() {
		if !created {
			n.dropUnused(sha)
		}
	}()
	done := n.upload(sha)
	defer done()
	if err := n.blobs.Put(sha, t.Artifact.Size, &chunkReader{stream: stream}); err != nil {
		switch {
		case errors.Is(err, blobstore.ErrTooLarge), errors.Is(err, blobstore.ErrMismatch), errors.Is(err, errStream):
			return status.Errorf(codes.InvalidArgument, "nimbus: topology %q: %v", t.Name, err)
		case ctx.Err() != nil:
			return status.FromContextError(ctx.Err()).Err()
		}
		return status.Errorf(codes.Internal, "nimbus: topology %q: store the artifact: %v", t.Name, err)
	}
	// Put stops one byte past the declared size; the stream must end there.
	if _, err := stream.Recv(); err != io.EOF {
		if err == nil {
			return status.Errorf(codes.InvalidArgument, "nimbus: topology %q: the submission goes on after the artifact's %d bytes", t.Name, t.Artifact.Size)
		}
		return err
	}
	if err := n.member.Hold(ctx, sha); err != nil {
		return storeError(err)
	}
	if err := n.awaitReplication(ctx, t); err != nil {
		return err
	}
	n.mu.Lock()
	l := n.mu.leader
	n.mu.Unlock()
	if l == nil {
		return n.mustLead(ctx)
	}
	if err := l.CreateTopology(ctx, t); err != nil {
		switch {
		case errors.Is(err, coord.ErrExists):
			return status.Errorf(codes.AlreadyExists, "nimbus: topology name %q was taken while the artifact uploaded: %v", t.Name, err)
		case errors.Is(err, coord.ErrNotLeader):
			return status.Errorf(codes.FailedPrecondition,
				"nimbus %s lost the leadership while topology %q uploaded; nothing was recorded, submit it again (to the new leader)", n.id, t.Name)
		}
		return storeError(err)
	}
	created = true
	n.log.Info("topology submitted", "topology", t.Name, "id", t.ID, "sha256", sha, "workers", t.Workers)
	if err := n.reconcileNow(ctx); err != nil {
		n.log.Warn("schedule after a submission", "topology", t.Name, "err", err)
	}
	resp := &nimbuspb.SubmitResponse{Id: t.ID, Status: submitActive}
	if why := n.pendingReason(t.ID); why != "" {
		resp.Status, resp.PendingReason = submitPending, why
	}
	return stream.SendAndClose(resp)
}

// checkSubmission validates a submission's header and returns the
// topology record it makes. Every error is codes.InvalidArgument or
// codes.AlreadyExists and names what is wrong.
func (n *Nimbus) checkSubmission(ctx context.Context, h *nimbuspb.SubmitHeader) (coord.Topology, error) {
	bad := func(format string, args ...any) (coord.Topology, error) {
		return coord.Topology{}, status.Errorf(codes.InvalidArgument, "nimbus: "+format, args...)
	}
	name := h.GetName()
	if err := checkName(name); err != nil {
		return bad("%v", err)
	}
	def := h.GetDefinition()
	if def == nil {
		return bad("topology %q: the submission has no definition", name)
	}
	if def.GetFactory() == "" {
		return bad("topology %q: the definition names no factory (the topology's name in the artifact)", name)
	}
	if w := def.GetWorkers(); w < 1 {
		return bad("topology %q: topology.workers must be ≥ 1, got %d", name, w)
	}
	pt := PlanTopology(def)
	// Bounded before it is planned: the plan is as large as the
	// topology's executors.
	if err := n.step.Limits.check(pt); err != nil {
		return bad("topology %q: %v", name, err)
	}
	if _, err := plan.New(pt); err != nil {
		return bad("topology %q: %v", name, err)
	}
	conf, err := decodeConfig(h.GetConfigJson())
	if err != nil {
		return bad("topology %q: config: %v", name, err)
	}
	if _, err := config.Resolve(n.cfg.Cluster, conf); err != nil {
		return bad("topology %q: %v", name, err)
	}
	if w, ok := conf[gale.TopologyWorkers]; ok {
		if f, isNum := w.(json.Number); isNum && f.String() != itoa(int(def.GetWorkers())) {
			return bad("topology %q: the config sets topology.workers to %s but the definition to %d: send one number", name, f, def.GetWorkers())
		}
	}
	art := h.GetArtifact()
	switch {
	case art == nil:
		return bad("topology %q: the submission describes no artifact", name)
	case !blobstore.ValidKey(art.GetSha256()):
		return bad("topology %q: artifact sha256 %q is not a SHA-256 in 64 lowercase hex digits", name, art.GetSha256())
	case art.GetSize() <= 0:
		return bad("topology %q: artifact size must be > 0, got %d", name, art.GetSize())
	case art.GetSize() > n.blobs.Limit():
		return bad("topology %q: the artifact is %d bytes, over the limit of %d MiB (nimbus.artifact.max.mb)",
			name, art.GetSize(), n.blobs.Limit()>>20)
	}
	if live, err := n.store.TopologyByName(ctx, name); err == nil {
		return coord.Topology{}, status.Errorf(codes.AlreadyExists,
			"nimbus: topology name %q is taken by the live topology %s (%s); kill it first or pick another name", name, live.ID, live.Status)
	} else if !errors.Is(err, coord.ErrNotFound) {
		return coord.Topology{}, storeError(err)
	}
	t := coord.Topology{
		ID:          name + "-" + randomHex(4),
		Name:        name,
		Definition:  pt,
		Workers:     int(def.GetWorkers()),
		Factory:     def.GetFactory(),
		Params:      def.GetParams(),
		Config:      map[string]any(conf),
		Artifact:    artifactRecord(art),
		Status:      coord.StatusActive,
		Secret:      randomHex(32),
		SubmittedAt: n.cfg.Now(),
	}
	// Its record must fit in etcd, with room for its updates.
	if b, err := json.Marshal(t); err != nil {
		return bad("topology %q: %v", name, err)
	} else if len(b) > maxRecordBytes {
		return bad("topology %q: its definition, config and parameters take %d bytes as a record, over the %d KiB nimbus keeps of a topology: "+
			"pass large data through the topology's own sources, not its config or parameters", name, len(b), maxRecordBytes>>10)
	}
	return t, nil
}

// checkName accepts a topology name: not empty, no '/', no white space or
// control characters, at most 256 bytes.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("the topology has no name")
	case len(name) > 256:
		return fmt.Errorf("topology name %.40q… is %d bytes long, want at most 256", name, len(name))
	case strings.Contains(name, "/"):
		return fmt.Errorf("topology name %q contains '/', which names may not", name)
	case strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return fmt.Errorf("topology name %q contains white space or a control character, which names may not", name)
	}
	return nil
}

// decodeConfig reads a topology config layer: a JSON object, or nothing.
func decodeConfig(b []byte) (gale.Config, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return gale.Config{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var c gale.Config
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	if c == nil {
		c = gale.Config{}
	}
	return c, nil
}

// awaitReplication waits until topology.min.replication.count nimbuses
// hold t's artifact, for at most topology.max.replication.wait.time.sec
// (-1: as long as it takes); past that it goes on, and says so in the log.
func (n *Nimbus) awaitReplication(ctx context.Context, t coord.Topology) error {
	eff, err := config.Resolve(n.cfg.Cluster, t.Config)
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error()) // checked in checkSubmission
	}
	want := intKey(eff, gale.TopologyMinReplicationCount)
	if want <= 1 {
		return nil // this nimbus holds it
	}
	wait := intKey(eff, gale.TopologyMaxReplicationWaitTimeSec)
	wctx, cancel := ctx, context.CancelFunc(func() {})
	if wait >= 0 {
		wctx, cancel = context.WithTimeout(ctx, time.Duration(wait)*time.Second)
	}
	defer cancel()
	changes := n.store.Changes(wctx, coord.NimbusPrefix)
	var got int
	for range changes {
		holders, err := n.store.Holders(wctx, t.Artifact.SHA256)
		if err == nil && len(holders) >= want {
			return nil
		}
		got = len(holders)
	}
	if ctx.Err() != nil {
		return status.FromContextError(ctx.Err()).Err()
	}
	n.log.Warn("scheduling before the artifact is replicated",
		"topology", t.Name, "sha256", t.Artifact.SHA256, "holders", got, "topology.min.replication.count", want,
		"topology.max.replication.wait.time.sec", wait)
	return nil
}

// errStream marks a submission stream that broke the protocol.
var errStream = errors.New("bad submission stream")

// chunkReader reads the artifact bytes of a submission stream.
type chunkReader struct {
	stream nimbuspb.Nimbus_SubmitServer
	buf    []byte
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		m, err := r.stream.Recv()
		if err != nil {
			return 0, err // io.EOF at the end of the stream
		}
		if m.GetHeader() != nil {
			return 0, fmt.Errorf("%w: a second header among the artifact's bytes", errStream)
		}
		r.buf = m.GetChunk()
	}
	k := copy(p, r.buf)
	r.buf = r.buf[k:]
	return k, nil
}

// dropUnused deletes the artifact of a submission that failed after it
// was stored, unless a topology uses it or another submission is storing
// it.
func (n *Nimbus) dropUnused(sha string) {
	if n.uploading(sha) || !n.blobs.Has(sha) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ts, err := n.store.Topologies(ctx)
	if err != nil || slices.ContainsFunc(ts, func(t coord.Topology) bool { return t.Artifact.SHA256 == sha }) {
		return
	}
	n.drop(ctx, sha)
}
