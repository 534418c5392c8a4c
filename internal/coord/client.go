package coord

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	grpcbackoff "google.golang.org/grpc/backoff"

	"github.com/gale-stream/gale/internal/config"
)

// Security is how a Gale process proves itself to etcd and checks
// etcd's certificate: TLS with a CA and a client certificate (etcd's
// --client-cert-auth), a user and password (etcd's auth), or both. The
// zero Security dials etcd in the clear, as anyone: dev clusters and
// tests.
type Security struct {
	// CAFile is the PEM CA etcd's server certificates are checked
	// against; "" trusts the system's roots once TLS is on.
	CAFile string
	// CertFile and KeyFile are the PEM client certificate and its key.
	CertFile, KeyFile string
	// Username and Password authenticate to an etcd with auth enabled.
	Username, Password string
}

// TLS reports whether s turns on TLS.
func (s Security) TLS() bool { return s.CAFile != "" || s.CertFile != "" || s.KeyFile != "" }

// SecurityFromConfig reads a Security from the cluster config's
// gale.etcd.tls.ca, .cert, .key, gale.etcd.username and
// gale.etcd.password (or gale.etcd.password.file), and checks that
// they make sense together.
func SecurityFromConfig(e *config.Effective) (Security, error) {
	s := Security{
		CAFile: e.String(config.GaleEtcdTLSCA), CertFile: e.String(config.GaleEtcdTLSCert), KeyFile: e.String(config.GaleEtcdTLSKey),
		Username: e.String(config.GaleEtcdUsername), Password: e.String(config.GaleEtcdPassword),
	}
	if path := e.String(config.GaleEtcdPasswordFile); s.Password == "" && path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return Security{}, fmt.Errorf("coord: %s: %w", config.GaleEtcdPasswordFile, err)
		}
		if s.Password = strings.TrimSpace(string(b)); s.Password == "" {
			return Security{}, fmt.Errorf("coord: %s %s is empty: write the etcd user's password in it", config.GaleEtcdPasswordFile, path)
		}
	}
	if (s.CertFile == "") != (s.KeyFile == "") {
		return Security{}, fmt.Errorf("coord: a client certificate for etcd needs both %s and %s, got %q and %q", config.GaleEtcdTLSCert, config.GaleEtcdTLSKey, s.CertFile, s.KeyFile)
	}
	if s.Username == "" && s.Password != "" {
		return Security{}, fmt.Errorf("coord: %s is set but %s is not: name the etcd user", config.GaleEtcdPassword, config.GaleEtcdUsername)
	}
	if s.Username != "" && s.Password == "" {
		return Security{}, fmt.Errorf("coord: %s %q needs %s or %s", config.GaleEtcdUsername, s.Username, config.GaleEtcdPassword, config.GaleEtcdPasswordFile)
	}
	return s, nil
}

// tlsConfig loads the files of s.
func (s Security) tlsConfig() (*tls.Config, error) {
	if !s.TLS() {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.CAFile != "" {
		pem, err := os.ReadFile(s.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", config.GaleEtcdTLSCA, err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s %s holds no PEM certificate", config.GaleEtcdTLSCA, s.CAFile)
		}
	}
	if s.CertFile != "" || s.KeyFile != "" {
		pair, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("%s %s, %s %s: %w", config.GaleEtcdTLSCert, s.CertFile, config.GaleEtcdTLSKey, s.KeyFile, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// Dial connects to an open etcd at endpoints: Dial(endpoints) is
// DialSecure(endpoints, Security{}).
func Dial(endpoints []string) (*clientv3.Client, error) {
	return DialSecure(endpoints, Security{})
}

// DialSecure connects to etcd at endpoints with sec. Without a user it
// does not wait for a connection: the first call does, within its
// context. With a user it authenticates at once, and fails unless etcd
// answers within 5 s (etcd's client asks for its token when it is made).
// With TLS on, an http:// endpoint is refused (etcd's client would dial
// it in the clear).
//
// A lost connection is retried at most 2 s apart (gRPC's default backs
// off to 2 minutes, which would keep a process away long after etcd
// returned), and a connection that stops answering is dropped after
// 15 s of silence on it, so a partition heals with a fresh one.
func DialSecure(endpoints []string, sec Security) (*clientv3.Client, error) {
	tc, err := sec.tlsConfig()
	if err != nil {
		return nil, fmt.Errorf("coord: etcd at %v: %w", endpoints, err)
	}
	if tc != nil {
		for _, ep := range endpoints {
			if strings.HasPrefix(ep, "http://") || strings.HasPrefix(ep, "unix://") {
				return nil, fmt.Errorf("coord: etcd endpoint %s is plain, but %s or %s turns on TLS: write it with https:// (gale.etcd.endpoints or --etcd)", ep, config.GaleEtcdTLSCA, config.GaleEtcdTLSCert)
			}
		}
	}
	if len(endpoints) == 0 {
		return nil, errors.New("coord: no etcd endpoints (gale.etcd.endpoints or --etcd)")
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		TLS:                  tc,
		Username:             sec.Username,
		Password:             sec.Password,
		DialTimeout:          5 * time.Second,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           grpcbackoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
			MinConnectTimeout: 5 * time.Second,
		})},
		Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("coord: etcd at %v: %w", endpoints, err)
	}
	return c, nil
}

// EnableAuth turns etcd's authentication on at endpoints, with
// sec.Username as a user of the root role, unless it is on already: the
// setup of `gale dev`'s own etcd when the cluster config names an etcd
// user. A root user (etcd needs one) gets a random password nobody keeps
// unless sec.Username is root.
func EnableAuth(ctx context.Context, endpoints []string, sec Security) error {
	anon := sec
	anon.Username, anon.Password = "", ""
	c, err := DialSecure(endpoints, anon)
	if err != nil {
		return err
	}
	defer c.Close()
	st, err := c.AuthStatus(ctx)
	if err != nil {
		return fmt.Errorf("coord: etcd's auth status: %w", err)
	}
	if st.Enabled {
		return nil
	}
	rootPassword := sec.Password
	if sec.Username != "root" {
		b := make([]byte, 16)
		rand.Read(b) // never fails (crypto/rand)
		rootPassword = hex.EncodeToString(b)
	}
	steps := []func() error{
		func() error { _, err := c.RoleAdd(ctx, "root"); return err },
		func() error { _, err := c.UserAdd(ctx, "root", rootPassword); return err },
		func() error { _, err := c.UserGrantRole(ctx, "root", "root"); return err },
	}
	if sec.Username != "root" {
		steps = append(steps,
			func() error { _, err := c.UserAdd(ctx, sec.Username, sec.Password); return err },
			func() error { _, err := c.UserGrantRole(ctx, sec.Username, "root"); return err })
	}
	steps = append(steps, func() error { _, err := c.AuthEnable(ctx); return err })
	for _, step := range steps {
		if err := step(); err != nil && !errors.Is(err, rpctypes.ErrRoleAlreadyExist) && !errors.Is(err, rpctypes.ErrUserAlreadyExist) {
			return fmt.Errorf("coord: enable etcd's auth for user %s: %w", sec.Username, err)
		}
	}
	return nil
}
