package supervisor

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/bearer"
	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// nimbusConn is the supervisor's connection to the nimbus leader, found
// through etcd when first needed and again after a call to it failed,
// for downloads; and the maker of the senders that report to each
// nimbus. Safe for concurrent use.
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
	conn, err = grpc.NewClient(leader.Addr, n.dialOptions()...)
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

// dialOptions are the options of every connection to a nimbus.
func (n *nimbusConn) dialOptions() []grpc.DialOption {
	opts := n.opts
	if opts == nil {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	// Report and Download need the cluster's token where nimbus checks one.
	return append(slices.Clip(opts), grpc.WithPerRPCCredentials(bearer.Credentials(n.token)))
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
	eff, err := config.Resolve(cluster, nil)
	if err != nil {
		return "", fmt.Errorf("supervisor: %w", err)
	}
	tok, err := bearer.Load(eff)
	if err != nil {
		return "", fmt.Errorf("supervisor: %w", err)
	}
	return tok, nil
}

// reportTimeout bounds one Report call.
const reportTimeout = 5 * time.Second

// sender reports to one nimbus: the latest report offered, retried with
// backoff until it lands or a newer one replaces it. Its mailbox holds
// one report: an older one not sent yet is dropped for the newer, which
// says it all again.
type sender struct {
	addr    string
	opts    []grpc.DialOption
	ctx     context.Context
	cancel  context.CancelFunc
	mailbox chan *nimbuspb.ReportRequest
}

// sender makes the sender to the nimbus at addr, which runs (run) until
// ctx is done or it is cancelled.
func (n *nimbusConn) sender(ctx context.Context, addr string) *sender {
	ctx, cancel := context.WithCancel(ctx)
	return &sender{addr: addr, opts: n.dialOptions(), ctx: ctx, cancel: cancel, mailbox: make(chan *nimbuspb.ReportRequest, 1)}
}

// offer replaces the report waiting in the mailbox with r. Called by one
// goroutine only (the reporter), so it never blocks.
func (sd *sender) offer(r *nimbuspb.ReportRequest) {
	select {
	case <-sd.mailbox:
	default:
	}
	sd.mailbox <- r
}

// run sends the reports offered until the sender is cancelled.
func (sd *sender) run(log *slog.Logger) {
	defer sd.cancel()
	conn, err := grpc.NewClient(sd.addr, sd.opts...)
	if err != nil {
		log.Error("cannot report to nimbus", "nimbus", sd.addr, "err", err)
		return
	}
	defer conn.Close()
	client := nimbuspb.NewNimbusClient(conn)
	failing := false
	for {
		var r *nimbuspb.ReportRequest
		select {
		case <-sd.ctx.Done():
			return
		case r = <-sd.mailbox:
		}
		for attempt := 0; ; attempt++ {
			ctx, cancel := context.WithTimeout(sd.ctx, reportTimeout)
			_, err := client.Report(ctx, r)
			cancel()
			if err == nil {
				if failing {
					log.Info("reporting to nimbus again", "nimbus", sd.addr)
					failing = false
				}
				break
			}
			if sd.ctx.Err() != nil {
				return
			}
			if !failing {
				log.Warn("cannot report to nimbus; retrying", "nimbus", sd.addr, "err", err)
				failing = true
			}
			// A nimbus that has just joined may not serve yet: try
			// again soon, or with the next report if one comes first.
			t := time.NewTimer(min(100*time.Millisecond<<min(attempt, 5), 2*time.Second))
			select {
			case <-sd.ctx.Done():
				t.Stop()
				return
			case next := <-sd.mailbox:
				r = next
			case <-t.C:
			}
			t.Stop()
		}
	}
}
