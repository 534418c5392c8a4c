package supervisor

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/bearer"
	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// nimbusConn is the supervisor's connection to the nimbus leader, found
// through etcd when first needed and again after a call to it failed.
// Safe for concurrent use.
type nimbusConn struct {
	store *coord.Store
	opts  []grpc.DialOption
	// token is the cluster's bearer token, sent on every call ("" for
	// none).
	token string

	mu struct {
		sync.Mutex
		addr string
		conn *grpc.ClientConn
	}
}

// client returns a client of the leader and its address.
func (n *nimbusConn) client(ctx context.Context) (nimbuspb.NimbusClient, string, error) {
	n.mu.Lock()
	conn, addr := n.mu.conn, n.mu.addr
	n.mu.Unlock()
	if conn != nil {
		return nimbuspb.NewNimbusClient(conn), addr, nil
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	leader, err := n.store.Leader(lctx)
	if err != nil {
		return nil, "", fmt.Errorf("find the nimbus leader: %w", err)
	}
	opts := slices.Clip(n.opts)
	if opts == nil {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	conn, err = grpc.NewClient(leader.Addr, append(opts, grpc.WithPerRPCCredentials(bearer.Credentials(n.token)))...)
	if err != nil {
		return nil, "", fmt.Errorf("nimbus %s at %s: %w", leader.ID, leader.Addr, err)
	}
	n.mu.Lock()
	if n.mu.conn != nil { // another caller was quicker
		conn.Close()
		conn, addr = n.mu.conn, n.mu.addr
	} else {
		n.mu.conn, n.mu.addr = conn, leader.Addr
		addr = leader.Addr
	}
	n.mu.Unlock()
	return nimbuspb.NewNimbusClient(conn), addr, nil
}

// failed drops the connection to addr after a call to it failed: the
// next call looks the leader up again.
func (n *nimbusConn) failed(addr string) {
	n.mu.Lock()
	conn := n.mu.conn
	if n.mu.addr != addr {
		conn = nil
	} else {
		n.mu.conn, n.mu.addr = nil, ""
	}
	n.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
}

func (n *nimbusConn) close() {
	n.mu.Lock()
	conn := n.mu.conn
	n.mu.conn, n.mu.addr = nil, ""
	n.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
}

// clusterToken is the bearer token of the cluster layer, which the
// supervisor sends to nimbus: Report and Download need it where nimbus
// checks one.
func clusterToken(cluster gale.Config) (string, error) {
	eff, err := gale.ResolveConfig(cluster, nil)
	if err != nil {
		return "", fmt.Errorf("supervisor: %w", err)
	}
	tok, err := bearer.Load(eff)
	if err != nil {
		return "", fmt.Errorf("supervisor: %w", err)
	}
	return tok, nil
}
