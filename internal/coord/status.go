package coord

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Status asks the etcd member that c dials first for its raft index and
// the store's revision. The raft index moves on every write that goes
// through raft (puts, deletes, transactions, lease grants and
// revocations, expiries) and not on lease keep-alives or reads; the
// revision moves on every change of a key. Together they show whether
// anything wrote to etcd between two calls.
func Status(ctx context.Context, c *clientv3.Client) (raftIndex uint64, revision int64, err error) {
	eps := c.Endpoints()
	if len(eps) == 0 {
		return 0, 0, errors.New("coord: status: the etcd client has no endpoint")
	}
	r, err := c.Status(ctx, eps[0])
	if err != nil {
		return 0, 0, fmt.Errorf("coord: status of etcd at %s: %w", eps[0], err)
	}
	return r.RaftIndex, r.Header.Revision, nil
}
