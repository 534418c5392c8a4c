package nimbus

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// mutating lists the full method names of the calls that change the
// cluster: those that need the bearer token and the leader.
var mutating = map[string]bool{
	nimbuspb.Nimbus_Submit_FullMethodName:     true,
	nimbuspb.Nimbus_Kill_FullMethodName:       true,
	nimbuspb.Nimbus_Activate_FullMethodName:   true,
	nimbuspb.Nimbus_Deactivate_FullMethodName: true,
	nimbuspb.Nimbus_Rebalance_FullMethodName:  true,
}

// loadToken returns the bearer token of the cluster config:
// nimbus.auth.token, else the contents of nimbus.auth.token.file with
// surrounding white space removed; "" when neither is set.
func loadToken(e *gale.Effective) (string, error) {
	if tok := e.String(gale.NimbusAuthToken); tok != "" {
		return tok, nil
	}
	path := e.String(gale.NimbusAuthTokenFile)
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("nimbus: nimbus.auth.token.file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("nimbus: nimbus.auth.token.file %s is empty: write the token in it", path)
	}
	return tok, nil
}

// loadTLS returns the server's TLS config from nimbus.tls.cert and
// nimbus.tls.key, or nil when neither is set.
func loadTLS(e *gale.Effective) (*tls.Config, error) {
	cert, key := e.String(gale.NimbusTLSCert), e.String(gale.NimbusTLSKey)
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
	pem, err := os.ReadFile(n.cluster.String(gale.NimbusTLSCert))
	if err != nil {
		return nil, fmt.Errorf("nimbus: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("nimbus: nimbus.tls.cert %s holds no PEM certificate", n.cluster.String(gale.NimbusTLSCert))
	}
	return credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}), nil
}

// authorize checks the bearer token of a mutating call.
func (n *Nimbus) authorize(ctx context.Context, method string) error {
	if n.token == "" || !mutating[method] {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		got, ok := strings.CutPrefix(v, "Bearer ")
		if ok && subtle.ConstantTimeCompare([]byte(got), []byte(n.token)) == 1 {
			return nil
		}
	}
	if len(md.Get("authorization")) == 0 {
		return status.Error(codes.Unauthenticated, "nimbus: this call needs the cluster's bearer token (authorization: Bearer TOKEN); set nimbus.auth.token or nimbus.auth.token.file where you run the command")
	}
	return status.Error(codes.Unauthenticated, "nimbus: the bearer token does not match the cluster's nimbus.auth.token")
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
