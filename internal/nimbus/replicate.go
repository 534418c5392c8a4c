package nimbus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/gale-stream/gale/internal/backoff"
	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// replicate keeps this nimbus's artifacts in line with the cluster's: on
// every change of the topologies or the nimbuses, and every
// nimbus.monitor.freq.secs, it downloads each artifact it lacks (those of
// the topologies, and those the leader holds for a submission in
// progress) from a nimbus that holds it, and, unless it leads, deletes
// those nothing needs any more. A download that failed is tried again a
// second later, then at doubling intervals up to 30 s. It returns when
// ctx is done.
func (n *Nimbus) replicate(ctx context.Context) {
	topos := n.store.Changes(ctx, coord.TopologiesPrefix)
	nims := n.store.Changes(ctx, coord.NimbusPrefix)
	tick := time.NewTicker(n.monitor)
	defer tick.Stop()
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	fails := 0
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-topos:
			if !ok {
				return
			}
		case _, ok := <-nims:
			if !ok {
				return
			}
		case <-tick.C:
		case <-retry.C:
		}
		missing, err := n.syncArtifacts(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			n.log.Warn("replicate artifacts", "err", err)
		}
		if err != nil || missing > 0 {
			// Try again soon, then less and less often.
			fails++
			retry.Reset(replicateRetry.Delay(fails))
		} else {
			fails = 0
		}
	}
}

// replicateRetry is the wait before replicate tries again after a sync
// that failed or left artifacts missing.
var replicateRetry = backoff.Doubling{Min: time.Second, Max: 30 * time.Second}

// syncArtifacts downloads the artifacts this nimbus lacks and cleans up
// those nothing needs. It returns how many topologies' artifacts it still
// lacks.
func (n *Nimbus) syncArtifacts(ctx context.Context) (missing int, err error) {
	s := n.store
	ts, err := s.Topologies(ctx)
	if err != nil {
		return 0, err
	}
	holds, err := s.Holds(ctx)
	if err != nil {
		return 0, err
	}
	nims, err := s.Nimbuses(ctx)
	if err != nil {
		return 0, err
	}
	addrs := make(map[string]string, len(nims))
	for _, m := range nims {
		addrs[m.ID] = m.Addr
	}
	leader, err := s.Leader(ctx)
	if err != nil && !errors.Is(err, coord.ErrNotFound) {
		return 0, err
	}
	// want: the artifacts to hold, with their sizes (0: from the download).
	want := make(map[string]int64)
	for sha, ids := range holds {
		if leader.ID != "" && slices.Contains(ids, leader.ID) {
			want[sha] = 0
		}
	}
	for _, t := range ts {
		want[t.Artifact.SHA256] = t.Artifact.Size
	}
	for _, sha := range sortedKeys(want) {
		if n.blobs.Has(sha) {
			continue
		}
		if err := n.fetch(ctx, sha, want[sha], holds[sha], leader.ID, addrs); err != nil {
			if want[sha] == 0 {
				// Only held, by no topology yet: a submission that may
				// have failed since. The next change tries again.
				n.log.Debug("replicate an artifact of a submission", "sha256", sha, "err", err)
				continue
			}
			n.log.Warn("replicate an artifact", "sha256", sha, "err", err)
			missing++
			continue
		}
		if err := n.member.Hold(ctx, sha); err != nil {
			return missing, fmt.Errorf("record artifact %s as held: %w", sha, err)
		}
		n.log.Info("replicated an artifact", "sha256", sha)
	}
	if missing == 0 {
		poke(n.synced)
	}
	if n.IsLeader() {
		return missing, nil // the leader deletes what it no longer needs itself
	}
	stored, err := n.blobs.List()
	if err != nil {
		return missing, err
	}
	for _, sha := range stored {
		if _, ok := want[sha]; !ok && !n.uploading(sha) {
			n.drop(ctx, sha)
		}
	}
	return missing, nil
}

// fetch downloads artifact sha from one of its holders, the leader first,
// and stores it. size is its size, or 0 for the size the holder sends.
func (n *Nimbus) fetch(ctx context.Context, sha string, size int64, holders []string, leader string, addrs map[string]string) error {
	order := slices.Clone(holders)
	slices.SortStableFunc(order, func(a, b string) int {
		switch {
		case a == leader && b != leader:
			return -1
		case b == leader && a != leader:
			return 1
		}
		return 0
	})
	var errs []error
	for _, h := range order {
		addr, ok := addrs[h]
		if h == n.id || !ok {
			continue
		}
		err := n.download(ctx, addr, sha, size)
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("from nimbus %s at %s: %w", h, addr, err))
	}
	if len(errs) == 0 {
		return errors.New("no other live nimbus holds it")
	}
	return errors.Join(errs...)
}

// download stores artifact sha streamed from the nimbus at addr.
func (n *Nimbus) download(ctx context.Context, addr, sha string, size int64) error {
	creds, err := n.clientCreds()
	if err != nil {
		return err
	}
	opt := grpc.WithTransportCredentials(insecure.NewCredentials())
	if creds != nil {
		opt = grpc.WithTransportCredentials(creds)
	}
	tok, err := n.peerCredentials()
	if err != nil {
		return err
	}
	conn, err := grpc.NewClient(addr, opt, grpc.WithPerRPCCredentials(tok))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := nimbuspb.NewNimbusClient(conn).Download(ctx, &nimbuspb.DownloadRequest{Sha256: sha})
	if err != nil {
		return err
	}
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	switch got := first.GetSize(); {
	case size == 0:
		size = got
	case got != size:
		return fmt.Errorf("it sends %d bytes, the topology's record says %d", got, size)
	}
	return n.blobs.Put(sha, size, &downloadReader{stream: stream, buf: first.GetData()})
}

// downloadReader reads the bytes of a Download stream.
type downloadReader struct {
	stream grpc.ServerStreamingClient[nimbuspb.Chunk]
	buf    []byte
}

func (r *downloadReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		c, err := r.stream.Recv()
		if err != nil {
			return 0, err // io.EOF at the end
		}
		r.buf = c.GetData()
	}
	k := copy(p, r.buf)
	r.buf = r.buf[k:]
	return k, nil
}

var _ io.Reader = (*downloadReader)(nil)

// drop deletes an artifact from the store and releases this nimbus's
// hold on it, so that no one asks it for the artifact any more.
func (n *Nimbus) drop(ctx context.Context, sha string) {
	n.log.Info("deleting an artifact", "sha256", sha)
	if err := n.blobs.Delete(sha); err != nil {
		n.log.Warn("delete an artifact", "sha256", sha, "err", err)
	}
	if err := n.member.Release(ctx, sha); err != nil {
		n.log.Warn("release an artifact's hold", "sha256", sha, "err", err)
	}
}
