// Package bearer is the cluster's bearer token (nimbus.auth.token, or
// the file of nimbus.auth.token.file): how a daemon loads it from the
// cluster config, sends it on its calls to nimbus (Credentials), and how
// nimbus checks it (Check). Supervisors and nimbuses send the same token
// the CLI does: one cluster credential.
package bearer

import (
	"context"
	"crypto/subtle"
	"fmt"
	"os"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/gale-stream/gale/internal/config"
)

// Load returns the bearer token of the cluster config: nimbus.auth.token,
// else the contents of nimbus.auth.token.file with surrounding white
// space removed; "" when neither is set.
func Load(e *config.Effective) (string, error) {
	if tok := e.String(config.NimbusAuthToken); tok != "" {
		return tok, nil
	}
	path := e.String(config.NimbusAuthTokenFile)
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", config.NimbusAuthTokenFile, err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("%s %s is empty: write the cluster's token in it", config.NimbusAuthTokenFile, path)
	}
	return tok, nil
}

// Credentials sends tok on every call as "authorization: Bearer TOKEN",
// or nothing when tok is "". They work without TLS too: nimbus decides
// whether a plain connection may carry a token (loopback).
func Credentials(tok string) credentials.PerRPCCredentials { return token(tok) }

type token string

func (t token) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	if t == "" {
		return nil, nil
	}
	return map[string]string{"authorization": "Bearer " + string(t)}, nil
}

func (token) RequireTransportSecurity() bool { return false }

// Check returns nil when the incoming call carries "authorization: Bearer
// want", compared in constant time, else a gRPC Unauthenticated error
// that says what is missing or wrong. want must not be "".
func Check(ctx context.Context, want string) error {
	md, _ := metadata.FromIncomingContext(ctx)
	got := md.Get("authorization")
	ok := 0
	for _, v := range got {
		if tok, found := strings.CutPrefix(v, "Bearer "); found {
			ok |= subtle.ConstantTimeCompare([]byte(tok), []byte(want))
		}
	}
	switch {
	case ok == 1:
		return nil
	case len(got) == 0:
		return status.Error(codes.Unauthenticated, "nimbus: this call needs the cluster's bearer token (authorization: Bearer TOKEN); set nimbus.auth.token or nimbus.auth.token.file where you run the command")
	default:
		return status.Error(codes.Unauthenticated, "nimbus: the bearer token does not match the cluster's nimbus.auth.token")
	}
}
