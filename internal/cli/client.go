package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/gale-stream/gale/internal/config"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// ClusterFlags are the flags every command that talks to nimbus has.
type ClusterFlags struct {
	File   string // a gale.yaml: nimbus.seeds, nimbus.thrift.port, auth, TLS
	Nimbus string // host:port, instead of nimbus.seeds
}

// Bind adds --file and --nimbus to cmd.
func (f *ClusterFlags) Bind(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.File, "file", "", "the cluster's gale.yaml `FILE`: nimbus.seeds, nimbus.thrift.port, nimbus.auth.token, nimbus.tls.cert")
	fl.StringVar(&f.Nimbus, "nimbus", "", "the nimbus to ask, `host:port`, instead of nimbus.seeds")
}

// ClientConfig is what a client needs to reach the nimbus leader.
type ClientConfig struct {
	Seeds []string // host:port each
	Token string   // bearer token; empty for none
	tls   *tls.Config
}

// FileConfig loads the gale.yaml of --file, nil without one.
func (f *ClusterFlags) FileConfig() (gale.Config, error) {
	if f.File == "" {
		return nil, nil
	}
	return config.LoadFile(f.File)
}

// ClientConfig resolves the cluster layer into where and how to dial.
func (f *ClusterFlags) ClientConfig() (ClientConfig, error) {
	file, err := f.FileConfig()
	if err != nil {
		return ClientConfig{}, err
	}
	eff, err := config.Resolve(file, nil)
	if err != nil {
		return ClientConfig{}, err
	}
	return f.ClientConfigFrom(eff)
}

// ClientConfigFrom is ClientConfig with the cluster layer already
// resolved into eff.
func (f *ClusterFlags) ClientConfigFrom(eff *config.Effective) (ClientConfig, error) {
	var cc ClientConfig
	port, _ := eff.Int(config.NimbusThriftPort)
	if f.Nimbus != "" {
		if _, _, err := net.SplitHostPort(f.Nimbus); err != nil {
			return cc, usageError{fmt.Errorf("--nimbus wants host:port, got %q", f.Nimbus)}
		}
		cc.Seeds = []string{f.Nimbus}
	} else {
		for _, s := range eff.Strings(config.NimbusSeeds) {
			cc.Seeds = append(cc.Seeds, seedAddr(s, port))
		}
	}
	cc.Token = eff.String(config.NimbusAuthToken)
	if cc.Token == "" {
		if path := eff.String(config.NimbusAuthTokenFile); path != "" {
			b, err := os.ReadFile(path)
			if err != nil {
				return cc, fmt.Errorf("%s: %w", config.NimbusAuthTokenFile, err)
			}
			if cc.Token = strings.TrimSpace(string(b)); cc.Token == "" {
				return cc, fmt.Errorf("%s: %s is empty: write the nimbus's bearer token in it", config.NimbusAuthTokenFile, path)
			}
		}
	}
	if path := eff.String(config.NimbusTLSCert); path != "" {
		pem, err := os.ReadFile(path)
		if err != nil {
			return cc, fmt.Errorf("%s: %w", config.NimbusTLSCert, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return cc, fmt.Errorf("%s: %s holds no PEM certificate", config.NimbusTLSCert, path)
		}
		cc.tls = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return cc, nil
}

// seedAddr is a nimbus.seeds entry as host:port: "host" gets port,
// "host:port" and "[v6]:port" stay as they are.
func seedAddr(seed string, port int) string {
	if _, _, err := net.SplitHostPort(seed); err == nil {
		return seed
	}
	return net.JoinHostPort(strings.Trim(seed, "[]"), strconv.Itoa(port))
}

// bearer adds the token to every call as "authorization: Bearer TOKEN".
// It works without TLS too: nimbus decides whether a plain connection
// may carry a token (loopback).
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}
func (bearer) RequireTransportSecurity() bool { return false }

// seedTimeout bounds each seed's ClusterInfo while the client looks for
// the leader.
const seedTimeout = 5 * time.Second

// client is a connection to the nimbus cluster: writes go to the
// leader (call), reads to the leader or, when it cannot answer, to any
// other nimbus (read), since every nimbus has every supervisor's
// reports. Close it. Safe for concurrent use; the fields leader and
// nimbus are for a caller that makes no concurrent calls (the commands).
type Client struct {
	cfg ClientConfig
	// find serializes findLeader: one lookup at a time.
	find sync.Mutex

	mu sync.Mutex // guards the fields below, and leader and nimbus
	// conns are the connections opened, by address.
	conns map[string]*grpc.ClientConn
	// members are the nimbuses the last ClusterInfo listed.
	members []string
	// answered is the nimbus that answered the last read.
	answered string
	// stale: a read found the leader unreachable, or none was known: the
	// next read looks for it again.
	stale bool

	leader string // addr; "" while the cluster has no leader
	nimbus nimbuspb.NimbusClient
}

// dial resolves the cluster layer and connects to the nimbus leader.
func (f *ClusterFlags) dial(ctx context.Context) (*Client, error) {
	cfg, err := f.ClientConfig()
	if err != nil {
		return nil, err
	}
	return DialNimbus(ctx, cfg)
}

// DialNimbus finds the leader through the seeds and connects to it. A
// cluster without a leader (one is being elected) gives a client whose
// reads work (any nimbus answers them) and whose writes look for the
// leader again.
func DialNimbus(ctx context.Context, cfg ClientConfig) (*Client, error) {
	c := &Client{cfg: cfg, conns: make(map[string]*grpc.ClientConn)}
	if err := c.FindLeader(ctx); err != nil && !errors.Is(err, errNoLeader) {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Leader is the address of the nimbus the client takes for the leader,
// "" while it knows none.
func (c *Client) Leader() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leader
}

// Close closes every connection the client opened.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cc := range c.conns {
		cc.Close()
	}
	c.conns = map[string]*grpc.ClientConn{}
}

func (c *Client) conn(addr string) (*grpc.ClientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cc, ok := c.conns[addr]; ok {
		return cc, nil
	}
	creds := insecure.NewCredentials()
	if c.cfg.tls != nil {
		creds = credentials.NewTLS(c.cfg.tls.Clone())
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds)}
	if c.cfg.Token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer(c.cfg.Token)))
	}
	cc, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("nimbus at %s: %w", addr, err)
	}
	c.conns[addr] = cc
	return cc, nil
}

// errNoLeader is findLeader's error when a nimbus answered but the
// cluster has no leader.
var errNoLeader = errors.New("no leader")

// noLeaderError is errNoLeader as the user reads it.
type noLeaderError struct{ seed string }

func (e noLeaderError) Error() string {
	return fmt.Sprintf("nimbus at %s answers, but the cluster has no leader yet: retry in a few seconds, or start a nimbus (gale nimbus) if none runs", e.seed)
}
func (noLeaderError) Is(target error) bool { return target == errNoLeader }

// findLeader asks the seeds in order for the cluster's leader, and
// connects to it. It also learns the nimbuses there are, for reads.
func (c *Client) FindLeader(ctx context.Context) error {
	c.find.Lock()
	defer c.find.Unlock()
	var tried []string
	answered := false // a nimbus answered, with its own error
	for _, seed := range c.cfg.Seeds {
		info, err := c.clusterInfoAt(ctx, seed)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			answered = answered || fromNimbus(err)
			tried = append(tried, fmt.Sprintf("%s (%s)", seed, grpcReason(err)))
			continue
		}
		var members []string
		for _, m := range info.GetNimbuses() {
			members = append(members, m.GetAddr())
		}
		c.mu.Lock()
		c.members, c.stale = members, false
		c.mu.Unlock()
		if info.LeaderAddr == "" {
			c.mu.Lock()
			c.leader, c.nimbus, c.stale = "", nil, true
			c.mu.Unlock()
			return noLeaderError{seed}
		}
		cc, err := c.conn(info.LeaderAddr)
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.leader = info.LeaderAddr
		c.nimbus = nimbuspb.NewNimbusClient(cc)
		c.mu.Unlock()
		return nil
	}
	if answered {
		return fmt.Errorf("no nimbus could tell the cluster's leader: %s", strings.Join(tried, ", "))
	}
	return fmt.Errorf("no nimbus answered at %s: check that nimbus runs there (gale nimbus, or gale dev on this machine) and that nimbus.seeds and nimbus.thrift.port in gale.yaml (--file), or --nimbus, name it",
		strings.Join(tried, ", "))
}

func (c *Client) clusterInfoAt(ctx context.Context, addr string) (*nimbuspb.ClusterInfoResponse, error) {
	cc, err := c.conn(addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, seedTimeout)
	defer cancel()
	return nimbuspb.NewNimbusClient(cc).ClusterInfo(ctx, &nimbuspb.ClusterInfoRequest{})
}

// leaderClient is the leader's client and address (nil and "" while
// none is known).
func (c *Client) LeaderClient() (nimbuspb.NimbusClient, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nimbus, c.leader
}

// call runs op against the leader. A stale leader (one that has become a
// standby) answers codes.FailedPrecondition: then the client finds the
// leader again, once, and retries op there if the leader is another.
func (c *Client) Call(ctx context.Context, op func(nimbuspb.NimbusClient) error) error {
	n, leader := c.LeaderClient()
	if n == nil {
		if err := c.FindLeader(ctx); err != nil {
			return err
		}
		n, leader = c.LeaderClient()
	}
	err := op(n)
	if status.Code(err) != codes.FailedPrecondition {
		return callError(leader, err)
	}
	if ferr := c.FindLeader(ctx); ferr != nil {
		return callError(leader, err)
	}
	again, now := c.LeaderClient()
	if now == leader {
		return callError(leader, err)
	}
	return callError(now, op(again))
}

// readTimeout bounds a read's call to one nimbus, so that one that does
// not answer (its machine gone) leaves time to ask the next.
const readTimeout = seedTimeout

// read runs op, a call that only reads (List, Get, ClusterInfo), against
// the leader, and if it cannot answer (unreachable, stopping, or a
// standby not caught up) against each other nimbus in turn: the members
// the cluster listed, then the seeds. Every nimbus hears every
// supervisor's reports, so any answers with the workers' states and the
// topologies' counters; only the pending reasons are the leader's.
// Answered says which nimbus answered.
func (c *Client) Read(ctx context.Context, op func(context.Context, nimbuspb.NimbusClient) error) error {
	c.mu.Lock()
	stale := c.stale
	c.mu.Unlock()
	if stale {
		// Ignore the error: the nimbuses known still answer reads.
		if err := c.FindLeader(ctx); err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	c.mu.Lock()
	order := []string{}
	if c.leader != "" {
		order = append(order, c.leader)
	}
	for _, a := range append(slices.Clone(c.members), c.cfg.Seeds...) {
		if !slices.Contains(order, a) {
			order = append(order, a)
		}
	}
	leader := c.leader
	c.mu.Unlock()
	var tried []string
	var last error
	for _, addr := range order {
		cc, err := c.conn(addr)
		if err != nil {
			return err
		}
		actx, cancel := context.WithTimeout(ctx, readTimeout)
		err = op(actx, nimbuspb.NewNimbusClient(cc))
		cancel()
		if err == nil {
			c.mu.Lock()
			c.answered = addr
			if addr != leader {
				c.stale = true
			}
			c.mu.Unlock()
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if code := status.Code(err); code != codes.Unavailable && code != codes.DeadlineExceeded && code != codes.FailedPrecondition {
			return callError(addr, err)
		}
		last = err
		tried = append(tried, fmt.Sprintf("%s (%s)", addr, grpcReason(err)))
	}
	if len(tried) == 1 {
		return callError(order[0], last)
	}
	return fmt.Errorf("no nimbus answered: %s", strings.Join(tried, ", "))
}

// answeredBy is the nimbus that answered the last read.
func (c *Client) answeredBy() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.answered
}

// callError makes a gRPC error from nimbus at addr readable: nimbus's own
// message, or for a transport failure what happened and where.
func callError(addr string, err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	switch st.Code() {
	case codes.Unavailable, codes.DeadlineExceeded:
		return fmt.Errorf("nimbus at %s: %s", addr, grpcReason(err))
	case codes.Unauthenticated, codes.PermissionDenied:
		return fmt.Errorf("nimbus at %s refused the call: %s (set nimbus.auth.token or nimbus.auth.token.file in gale.yaml, --file)", addr, st.Message())
	case codes.Canceled:
		return context.Canceled
	}
	return errors.New(st.Message())
}

// fromNimbus says whether a failed call's error is nimbus's own account
// (such as "nimbus N cannot reach etcd …"), rather than the transport's.
func fromNimbus(err error) bool {
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.Unavailable && strings.HasPrefix(st.Message(), "nimbus")
}

// grpcReason is a short account of a failed call.
func grpcReason(err error) string {
	st, ok := status.FromError(err)
	if !ok {
		return err.Error()
	}
	switch st.Code() {
	case codes.Unavailable:
		msg := st.Message()
		if fromNimbus(err) {
			return msg
		}
		if i := strings.LastIndex(msg, ": "); i >= 0 && strings.Contains(msg, "dial") {
			msg = strings.TrimSuffix(msg[i+2:], `"`)
		}
		if strings.Contains(msg, "server preface") {
			msg += "; if nimbus serves TLS, set nimbus.tls.cert"
		}
		return "unreachable: " + msg
	case codes.DeadlineExceeded:
		return "no answer within " + seedTimeout.String()
	}
	return st.Message()
}
