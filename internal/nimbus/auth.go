package nimbus

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/gale-stream/gale/internal/bearer"
	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// public lists the full method names of the documented public reads:
// List, Get and ClusterInfo answer without the bearer token, as Storm's
// UI and getClusterInfo are open by default; they show names, states and
// counters, never an artifact or a secret. Every other call, including
// any added to the service later, needs the token when one is set:
// Submit, Kill, Activate, Deactivate, Rebalance, and Report, Download and
// Totals, which supervisors and the other nimbuses call with the cluster's
// token.
var public = map[string]bool{
	nimbuspb.Nimbus_List_FullMethodName:        true,
	nimbuspb.Nimbus_Get_FullMethodName:         true,
	nimbuspb.Nimbus_ClusterInfo_FullMethodName: true,
}

// loadToken returns the bearer token of the cluster config (see
// bearer.Load); "" when none is set.
func loadToken(e *config.Effective) (string, error) {
	tok, err := bearer.Load(e)
	if err != nil {
		return "", fmt.Errorf("nimbus: %w", err)
	}
	return tok, nil
}

// loadTLS returns the server's TLS config from nimbus.tls.cert and
// nimbus.tls.key, or nil when neither is set.
func loadTLS(e *config.Effective) (*tls.Config, error) {
	cert, key := e.String(config.NimbusTLSCert), e.String(config.NimbusTLSKey)
	if cert == "" && key == "" {
		return nil, nil
	}
	if cert == "" || key == "" {
		return nil, fmt.Errorf("nimbus: TLS needs both nimbus.tls.cert and nimbus.tls.key, got cert %q and key %q", cert, key)
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("nimbus: nimbus.tls.cert %s, nimbus.tls.key %s: %w", cert, key, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// clientCreds are the transport credentials this nimbus dials other
// nimbuses with: TLS trusting nimbus.tls.cert (the cluster's certificate,
// or the CA that signed each nimbus's) when TLS is on.
func (n *Nimbus) clientCreds() (credentials.TransportCredentials, error) {
	if n.tls == nil {
		return nil, nil
	}
	pem, err := os.ReadFile(n.cluster.String(config.NimbusTLSCert))
	if err != nil {
		return nil, fmt.Errorf("nimbus: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("nimbus: nimbus.tls.cert %s holds no PEM certificate", n.cluster.String(config.NimbusTLSCert))
	}
	return credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}), nil
}

// authorize checks the bearer token of every call but the public reads.
func (n *Nimbus) authorize(ctx context.Context, method string) error {
	if n.token == "" || public[method] {
		return nil
	}
	return bearer.Check(ctx, n.token)
}

// peerCredentials is the token this nimbus sends to the other nimbuses
// it downloads artifacts from: the cluster's token, even where this
// nimbus, bound to loopback, checks none itself.
func (n *Nimbus) peerCredentials() (credentials.PerRPCCredentials, error) {
	tok, err := loadToken(n.cluster)
	if err != nil {
		return nil, err
	}
	return bearer.Credentials(tok), nil
}

func (n *Nimbus) unaryAuth(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := n.authorize(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (n *Nimbus) streamAuth(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if err := n.authorize(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return h(srv, ss)
}

// dialEtcd connects to etcd with the cluster config's gale.etcd.tls.* and
// gale.etcd.username settings.
func (n *Nimbus) dialEtcd() (*clientv3.Client, error) {
	sec, err := coord.SecurityFromConfig(n.cluster)
	if err != nil {
		return nil, err
	}
	return coord.DialSecure(n.cfg.Endpoints, sec)
}
