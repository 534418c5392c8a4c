package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/nimbuspb"
	"github.com/gale-stream/gale/internal/ui"
)

func newUICmd() *cobra.Command {
	var (
		cf   ClusterFlags
		addr string
	)
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve the web UI (/), Storm's UI REST API (/api/v1) and Prometheus /metrics for a cluster",
		Long: `Serve a web UI at / (the cluster, each topology drawn as a graph with live
charts, its components, errors and workers, and the actions), Storm's UI REST
API under /api/v1 (cluster/summary, supervisor/summary, nimbus/summary,
topology/summary, topology/ID, topology/ID/component/C,
topology/ID/visualization, and POST topology/ID/activate, deactivate,
rebalance/WAIT and kill/WAIT) with Storm's field names, and Prometheus
metrics on /metrics, from the nimbuses that nimbus.seeds (--file) or
--nimbus names: reads from the leader, or from another nimbus when the leader
cannot answer (every nimbus has the supervisors' reports), mutations from the
leader.

It binds 127.0.0.1 on ui.port (default 8080) unless --addr says otherwise.
The UI holds no token: reads need none, and a mutation passes the caller's
"Authorization: Bearer TOKEN" header on to nimbus, which checks it against
nimbus.auth.token. It runs until SIGINT or SIGTERM.`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			file, err := cf.FileConfig()
			if err != nil {
				return err
			}
			eff, err := config.Resolve(file, nil)
			if err != nil {
				return err
			}
			cc, err := cf.ClientConfigFrom(eff)
			if err != nil {
				return err
			}
			if addr == "" {
				port, _ := eff.Int(config.UIPort)
				addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			} else if _, _, err := net.SplitHostPort(addr); err != nil {
				return Usage(fmt.Errorf("--addr wants host:port (or :port for every address), got %q", addr))
			}
			s, err := StartUI(addr, cc)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "ui: serving the web UI on http://%s/, the REST API on http://%s/api/v1 and metrics on http://%s/metrics\n", s.Addr, s.Addr, s.Addr)
			select {
			case <-cmd.Context().Done():
				return s.Stop()
			case err := <-s.done:
				s.done <- err // for stop
				return errors.Join(err, s.Stop())
			}
		},
	}
	cf.Bind(cmd)
	cmd.Flags().StringVar(&addr, "addr", "", "the `host:port` to serve on (default 127.0.0.1:ui.port)")
	return cmd
}

// UIServer serves the UI's handler until Stop.
type UIServer struct {
	Addr   string // bound, host:port
	srv    *http.Server
	nimbus *uiNimbus
	done   chan error // Serve's end; buffered
	once   sync.Once
	err    error
}

// uiStopGrace bounds how long stop waits for requests in flight.
const uiStopGrace = 5 * time.Second

// StartUI serves the UI on addr, asking the nimbus leader that cc's seeds
// name. The UI dials nimbus without cc's token: mutations carry their
// caller's.
func StartUI(addr string, cc ClientConfig) (*UIServer, error) {
	cc.Token = ""
	nb := &uiNimbus{cfg: cc}
	h, err := ui.New(ui.Config{Nimbus: nb})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ui: cannot serve on %s: %w (is another gale ui or gale dev using it? pick another port)", addr, err)
	}
	s := &UIServer{
		Addr:   ln.Addr().String(),
		srv:    &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second},
		nimbus: nb,
		done:   make(chan error, 1),
	}
	go func() {
		err := s.srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	return s, nil
}

// Stop stops serving, waiting up to uiStopGrace for requests in flight,
// and closes the connections to nimbus. Idempotent.
func (s *UIServer) Stop() error {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), uiStopGrace)
		defer cancel()
		if err := s.srv.Shutdown(ctx); err != nil {
			s.srv.Close()
		}
		s.err = <-s.done
		s.nimbus.close()
	})
	return s.err
}

// uiNimbus is the cluster's nimbuses, for the UI: reads (List, Get,
// ClusterInfo) go to the leader or, when it cannot answer (killed, or
// the cluster between leaders), to any other nimbus, which has every
// supervisor's reports too; writes go to the leader, found on the first
// call and again when the one called has stepped down or is unreachable.
// Its calls return nimbus's gRPC errors as they are, so that the UI
// answers them with their HTTP status. Safe for concurrent use.
type uiNimbus struct {
	cfg ClientConfig
	// mu serializes making the client; calls run outside it.
	mu struct {
		sync.Mutex
		c *Client
	}
}

// client returns the client, dialling the cluster on first use.
func (n *uiNimbus) client(ctx context.Context) (*Client, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.mu.c == nil {
		c, err := DialNimbus(ctx, n.cfg)
		if err != nil {
			return nil, status.Error(codes.Unavailable, err.Error())
		}
		n.mu.c = c
	}
	return n.mu.c, nil
}

// leader returns a client of the leader, looking for it again when the
// current one is stale (the one a call failed on) or none is known.
func (n *uiNimbus) leader(ctx context.Context, stale nimbuspb.NimbusClient) (nimbuspb.NimbusClient, error) {
	c, err := n.client(ctx)
	if err != nil {
		return nil, err
	}
	if l, _ := c.LeaderClient(); l == nil || l == stale {
		if err := c.FindLeader(ctx); err != nil {
			return nil, status.Error(codes.Unavailable, err.Error())
		}
	}
	l, _ := c.LeaderClient()
	return l, nil
}

func (n *uiNimbus) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.mu.c != nil {
		n.mu.c.Close()
		n.mu.c = nil
	}
}

// uiCall runs op on the leader, and once more on the leader found again
// if the first answers that it does not lead or cannot be reached.
func uiCall[T any](ctx context.Context, n *uiNimbus, op func(nimbuspb.NimbusClient) (T, error)) (T, error) {
	var zero T
	c, err := n.leader(ctx, nil)
	if err != nil {
		return zero, err
	}
	v, err := op(c)
	if code := status.Code(err); code != codes.FailedPrecondition && code != codes.Unavailable {
		return v, err
	}
	again, ferr := n.leader(ctx, c)
	if ferr != nil {
		return v, err
	}
	return op(again)
}

// uiRead runs op, a read, on any nimbus that answers (client.read),
// returning the last nimbus's gRPC error if none does.
func uiRead[T any](ctx context.Context, n *uiNimbus, op func(context.Context, nimbuspb.NimbusClient) (T, error)) (T, error) {
	var v T
	c, err := n.client(ctx)
	if err != nil {
		return v, err
	}
	var last error
	err = c.Read(ctx, func(ctx context.Context, nc nimbuspb.NimbusClient) (err error) {
		v, err = op(ctx, nc)
		last = err
		return err
	})
	if err != nil && last != nil {
		return v, last
	}
	return v, err
}

func (n *uiNimbus) List(ctx context.Context, in *nimbuspb.ListRequest, opts ...grpc.CallOption) (*nimbuspb.ListResponse, error) {
	return uiRead(ctx, n, func(ctx context.Context, c nimbuspb.NimbusClient) (*nimbuspb.ListResponse, error) {
		return c.List(ctx, in, opts...)
	})
}

func (n *uiNimbus) Get(ctx context.Context, in *nimbuspb.GetRequest, opts ...grpc.CallOption) (*nimbuspb.TopologyInfo, error) {
	return uiRead(ctx, n, func(ctx context.Context, c nimbuspb.NimbusClient) (*nimbuspb.TopologyInfo, error) {
		return c.Get(ctx, in, opts...)
	})
}

func (n *uiNimbus) ClusterInfo(ctx context.Context, in *nimbuspb.ClusterInfoRequest, opts ...grpc.CallOption) (*nimbuspb.ClusterInfoResponse, error) {
	return uiRead(ctx, n, func(ctx context.Context, c nimbuspb.NimbusClient) (*nimbuspb.ClusterInfoResponse, error) {
		return c.ClusterInfo(ctx, in, opts...)
	})
}

func (n *uiNimbus) Kill(ctx context.Context, in *nimbuspb.KillRequest, opts ...grpc.CallOption) (*nimbuspb.KillResponse, error) {
	return uiCall(ctx, n, func(c nimbuspb.NimbusClient) (*nimbuspb.KillResponse, error) { return c.Kill(ctx, in, opts...) })
}

func (n *uiNimbus) Activate(ctx context.Context, in *nimbuspb.ActivateRequest, opts ...grpc.CallOption) (*nimbuspb.ActivateResponse, error) {
	return uiCall(ctx, n, func(c nimbuspb.NimbusClient) (*nimbuspb.ActivateResponse, error) { return c.Activate(ctx, in, opts...) })
}

func (n *uiNimbus) Deactivate(ctx context.Context, in *nimbuspb.DeactivateRequest, opts ...grpc.CallOption) (*nimbuspb.DeactivateResponse, error) {
	return uiCall(ctx, n, func(c nimbuspb.NimbusClient) (*nimbuspb.DeactivateResponse, error) {
		return c.Deactivate(ctx, in, opts...)
	})
}

func (n *uiNimbus) Rebalance(ctx context.Context, in *nimbuspb.RebalanceRequest, opts ...grpc.CallOption) (*nimbuspb.RebalanceResponse, error) {
	return uiCall(ctx, n, func(c nimbuspb.NimbusClient) (*nimbuspb.RebalanceResponse, error) {
		return c.Rebalance(ctx, in, opts...)
	})
}
