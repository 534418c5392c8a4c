// Package etcdembed runs a single-node etcd inside the process: the
// coordination store of the stock binary's `gale etcd` and `gale dev`, and
// of the tests. It is apart from internal/coord so that a user's binary,
// which talks to etcd as a client only, does not link etcd's server.
package etcdembed

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Etcd is a single-node etcd run inside this process: the
// coordination store of `gale dev` and of the tests.
type Etcd struct {
	etcd *embed.Etcd
	// Endpoints are its client URLs, for clientv3.Config.Endpoints.
	Endpoints []string
}

// Config says where an embedded etcd keeps its data and listens.
type Config struct {
	// Dir holds its data; it survives a restart in the same Dir.
	Dir string
	// ClientURL is where clients connect, such as http://127.0.0.1:2379;
	// port 0 picks a free port.
	ClientURL string
	// PeerURL is its raft peer URL; empty means http://127.0.0.1:0.
	PeerURL string
	// CertFile and KeyFile, when set, serve ClientURL (then https://)
	// with TLS: etcd's --cert-file and --key-file.
	CertFile, KeyFile string
	// TrustedCAFile with ClientCertAuth refuses every client that does
	// not present a certificate signed by it: etcd's --trusted-ca-file
	// and --client-cert-auth.
	TrustedCAFile  string
	ClientCertAuth bool
}

// Start starts an embedded single-node etcd and waits until it
// serves.
func Start(c Config) (*Etcd, error) {
	if c.Dir == "" {
		return nil, errors.New("etcdembed: embedded etcd needs a data directory")
	}
	if c.ClientURL == "" {
		c.ClientURL = "http://127.0.0.1:2379"
	}
	if c.PeerURL == "" {
		c.PeerURL = "http://127.0.0.1:0"
	}
	cu, err := url.Parse(c.ClientURL)
	if err != nil {
		return nil, fmt.Errorf("etcdembed: etcd client URL %q: %w", c.ClientURL, err)
	}
	pu, err := url.Parse(c.PeerURL)
	if err != nil {
		return nil, fmt.Errorf("etcdembed: etcd peer URL %q: %w", c.PeerURL, err)
	}
	cfg := embed.NewConfig()
	cfg.Name = "gale"
	cfg.Dir = c.Dir
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*pu}
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	scheme := "http://"
	if c.CertFile != "" || c.KeyFile != "" {
		if c.CertFile == "" || c.KeyFile == "" {
			return nil, fmt.Errorf("etcdembed: etcd's TLS needs a certificate and its key, got %q and %q", c.CertFile, c.KeyFile)
		}
		if cu.Scheme != "https" {
			return nil, fmt.Errorf("etcdembed: etcd client URL %s: write https:// to serve it with TLS", c.ClientURL)
		}
		cfg.ClientTLSInfo = transport.TLSInfo{CertFile: c.CertFile, KeyFile: c.KeyFile,
			TrustedCAFile: c.TrustedCAFile, ClientCertAuth: c.ClientCertAuth}
		scheme = "https://"
	} else if c.ClientCertAuth || cu.Scheme == "https" {
		return nil, fmt.Errorf("etcdembed: etcd client URL %s: https:// and client certificates need a server certificate and key", c.ClientURL)
	}
	cfg.LogLevel = "error"
	// bcrypt's least cost (4) for the passwords of etcd's auth: an
	// embedded etcd is a dev cluster's or a test's, where the default
	// (10) only makes each authentication slow.
	cfg.BcryptCost = 4
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcdembed: start embedded etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("etcdembed: embedded etcd: %w", err)
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, errors.New("etcdembed: embedded etcd did not become ready in 60 s")
	}
	em := &Etcd{etcd: e}
	for _, l := range e.Clients {
		em.Endpoints = append(em.Endpoints, scheme+l.Addr().String())
	}
	return em, nil
}

// RaftIndex is the server's applied raft index: it moves on every write
// that goes through raft, lease grants and revocations included, and not
// on lease keep-alives.
func (e *Etcd) RaftIndex() uint64 { return e.etcd.Server.AppliedIndex() }

// Close stops the server and waits for it.
func (e *Etcd) Close() { e.etcd.Close() }
