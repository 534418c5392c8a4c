package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
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

// clusterFlags are the flags every command that talks to nimbus has.
type clusterFlags struct {
	file   string // a gale.yaml: nimbus.seeds, nimbus.thrift.port, auth, TLS
	nimbus string // host:port, instead of nimbus.seeds
}

func (f *clusterFlags) bind(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.file, "file", "", "the cluster's gale.yaml `FILE`: nimbus.seeds, nimbus.thrift.port, nimbus.auth.token, nimbus.tls.cert")
	fl.StringVar(&f.nimbus, "nimbus", "", "the nimbus to ask, `host:port`, instead of nimbus.seeds")
}

// clientConfig is what a client needs to reach the nimbus leader.
type clientConfig struct {
	seeds []string // host:port each
	token string   // bearer token; empty for none
	tls   *tls.Config
}

// fileConfig loads the gale.yaml of --file, nil without one.
func (f *clusterFlags) fileConfig() (gale.Config, error) {
	if f.file == "" {
		return nil, nil
	}
	return gale.LoadConfigFile(f.file)
}

// clientConfig resolves the cluster layer into where and how to dial.
func (f *clusterFlags) clientConfig() (clientConfig, error) {
	file, err := f.fileConfig()
	if err != nil {
		return clientConfig{}, err
	}
	eff, err := gale.ResolveConfig(file, nil)
	if err != nil {
		return clientConfig{}, err
	}
	return f.clientConfigFrom(eff)
}

func (f *clusterFlags) clientConfigFrom(eff *gale.Effective) (clientConfig, error) {
	var cc clientConfig
	port, _ := eff.Int(gale.NimbusThriftPort)
	if f.nimbus != "" {
		if _, _, err := net.SplitHostPort(f.nimbus); err != nil {
			return cc, usageError{fmt.Errorf("--nimbus wants host:port, got %q", f.nimbus)}
		}
		cc.seeds = []string{f.nimbus}
	} else {
		for _, s := range eff.Strings(gale.NimbusSeeds) {
			cc.seeds = append(cc.seeds, seedAddr(s, port))
		}
	}
	cc.token = eff.String(gale.NimbusAuthToken)
	if cc.token == "" {
		if path := eff.String(gale.NimbusAuthTokenFile); path != "" {
			b, err := os.ReadFile(path)
			if err != nil {
				return cc, fmt.Errorf("%s: %w", gale.NimbusAuthTokenFile, err)
			}
			if cc.token = strings.TrimSpace(string(b)); cc.token == "" {
				return cc, fmt.Errorf("%s: %s is empty: write the nimbus's bearer token in it", gale.NimbusAuthTokenFile, path)
			}
		}
	}
	if path := eff.String(gale.NimbusTLSCert); path != "" {
		pem, err := os.ReadFile(path)
		if err != nil {
			return cc, fmt.Errorf("%s: %w", gale.NimbusTLSCert, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return cc, fmt.Errorf("%s: %s holds no PEM certificate", gale.NimbusTLSCert, path)
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

// client is a connection to the nimbus leader. Close it.
type client struct {
	cfg    clientConfig
	conns  map[string]*grpc.ClientConn
	leader string // addr
	nimbus nimbuspb.NimbusClient
}

// dial resolves the cluster layer and connects to the nimbus leader.
func (f *clusterFlags) dial(ctx context.Context) (*client, error) {
	cfg, err := f.clientConfig()
	if err != nil {
		return nil, err
	}
	return dialNimbus(ctx, cfg)
}

// dialNimbus finds the leader through the seeds and connects to it.
func dialNimbus(ctx context.Context, cfg clientConfig) (*client, error) {
	c := &client{cfg: cfg, conns: make(map[string]*grpc.ClientConn)}
	if err := c.findLeader(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Close closes every connection the client opened.
func (c *client) Close() {
	for _, cc := range c.conns {
		cc.Close()
	}
}

func (c *client) conn(addr string) (*grpc.ClientConn, error) {
	if cc, ok := c.conns[addr]; ok {
		return cc, nil
	}
	creds := insecure.NewCredentials()
	if c.cfg.tls != nil {
		creds = credentials.NewTLS(c.cfg.tls.Clone())
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds)}
	if c.cfg.token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer(c.cfg.token)))
	}
	cc, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("nimbus at %s: %w", addr, err)
	}
	c.conns[addr] = cc
	return cc, nil
}

// findLeader asks the seeds in order for the cluster's leader, and
// connects to it.
func (c *client) findLeader(ctx context.Context) error {
	var tried []string
	answered := false // a nimbus answered, with its own error
	for _, seed := range c.cfg.seeds {
		info, err := c.clusterInfoAt(ctx, seed)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			answered = answered || fromNimbus(err)
			tried = append(tried, fmt.Sprintf("%s (%s)", seed, grpcReason(err)))
			continue
		}
		if info.LeaderAddr == "" {
			return fmt.Errorf("nimbus at %s answers, but the cluster has no leader yet: retry in a few seconds, or start a nimbus (gale nimbus) if none runs", seed)
		}
		cc, err := c.conn(info.LeaderAddr)
		if err != nil {
			return err
		}
		c.leader = info.LeaderAddr
		c.nimbus = nimbuspb.NewNimbusClient(cc)
		return nil
	}
	if answered {
		return fmt.Errorf("no nimbus could tell the cluster's leader: %s", strings.Join(tried, ", "))
	}
	return fmt.Errorf("no nimbus answered at %s: check that nimbus runs there (gale nimbus, or gale dev on this machine) and that nimbus.seeds and nimbus.thrift.port in gale.yaml (--file), or --nimbus, name it",
		strings.Join(tried, ", "))
}

func (c *client) clusterInfoAt(ctx context.Context, addr string) (*nimbuspb.ClusterInfoResponse, error) {
	cc, err := c.conn(addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, seedTimeout)
	defer cancel()
	return nimbuspb.NewNimbusClient(cc).ClusterInfo(ctx, &nimbuspb.ClusterInfoRequest{})
}

// call runs op against the leader. A stale leader (one that has become a
// standby) answers codes.FailedPrecondition: then the client finds the
// leader again, once, and retries op there if the leader is another.
func (c *client) call(ctx context.Context, op func(nimbuspb.NimbusClient) error) error {
	err := op(c.nimbus)
	if status.Code(err) != codes.FailedPrecondition {
		return callError(c.leader, err)
	}
	was := c.leader
	if ferr := c.findLeader(ctx); ferr != nil || c.leader == was {
		return callError(was, err)
	}
	return callError(c.leader, op(c.nimbus))
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
