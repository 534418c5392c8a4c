package coord

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/coord/etcdembed"
	"github.com/gale-stream/gale/internal/testutil"
)

// securedEtcd starts an embedded etcd that serves TLS and refuses every
// client without a certificate of its CA, as the README's deployment
// runs etcd (--client-cert-auth --trusted-ca-file --cert-file
// --key-file). It returns the endpoint and the Security of a client the
// CA certified.
func securedEtcd(t *testing.T) (endpoint string, ca *testutil.CA, sec Security) {
	t.Helper()
	dir := t.TempDir()
	ca = testutil.NewCA(t)
	caFile := ca.WriteCA(t, dir)
	serverCert, serverKey := ca.Issue(t, "etcd", "127.0.0.1", "localhost").Write(t, dir, "etcd")
	e, err := etcdembed.Start(etcdembed.Config{Dir: filepath.Join(dir, "data"), ClientURL: "https://127.0.0.1:0",
		CertFile: serverCert, KeyFile: serverKey, TrustedCAFile: caFile, ClientCertAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	if !strings.HasPrefix(e.Endpoints[0], "https://") {
		t.Fatalf("a TLS etcd's endpoint is %s, want https://", e.Endpoints[0])
	}
	clientCert, clientKey := ca.Issue(t, "gale").Write(t, dir, "gale")
	return e.Endpoints[0], ca, Security{CAFile: caFile, CertFile: clientCert, KeyFile: clientKey}
}

func TestSecuredEtcdServesCertifiedClientsOnly(t *testing.T) {
	endpoint, ca, sec := securedEtcd(t)
	c, err := DialSecure([]string{endpoint}, sec)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Put(testutil.Context(t), "/probe", "certified"); err != nil {
		t.Fatalf("Put with the client certificate: %v", err)
	}
	resp, err := c.Get(testutil.Context(t), "/probe")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "certified" {
		t.Fatalf("Get with the client certificate: %v, %v", resp, err)
	}

	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM)
	// Anonymous: TLS that trusts etcd but presents no certificate, and a
	// certificate of another CA. etcd refuses both in the handshake.
	stranger := testutil.NewCA(t).Issue(t, "stranger")
	for name, certs := range map[string][]tls.Certificate{"no certificate": nil, "another CA's certificate": {stranger.TLS}} {
		conn, err := tls.Dial("tcp", u.Host, &tls.Config{RootCAs: pool, Certificates: certs, NextProtos: []string{"h2"}})
		if err == nil {
			// TLS 1.3: the client's handshake ends before the server has
			// checked its certificate; the refusal comes with the first read.
			_, err = conn.Read(make([]byte, 1))
			conn.Close()
		}
		if err == nil {
			t.Errorf("%s: etcd accepted the connection", name)
		} else if !strings.Contains(err.Error(), "certificate") {
			t.Errorf("%s: got %v, want a refusal for the certificate", name, err)
		}
	}
	// Plain: an http:// endpoint with TLS settings is refused at once,
	// since etcd's client would dial it in the clear.
	if _, err := DialSecure([]string{"http://" + u.Host}, sec); err == nil || !strings.Contains(err.Error(), "https://") {
		t.Errorf("DialSecure of http:// with TLS on: got %v, want a refusal that says https://", err)
	}
}

// An etcd with auth enabled refuses a client without the user's
// password; gale.etcd.username and gale.etcd.password get in.
func TestEtcdUserAndPassword(t *testing.T) {
	cl := newCluster(t)
	ctx := testutil.Context(t)
	for _, step := range []func() error{
		func() error { _, err := cl.c.RoleAdd(ctx, "root"); return err },
		func() error { _, err := cl.c.UserAdd(ctx, "root", "rootpw"); return err },
		func() error { _, err := cl.c.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := cl.c.UserAdd(ctx, "gale", "galepw"); return err },
		func() error { _, err := cl.c.UserGrantRole(ctx, "gale", "root"); return err },
		func() error { _, err := cl.c.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	// cl.c, anonymous, is refused now.
	if _, err := cl.c.Put(ctx, "/probe", "anonymous"); !errors.Is(err, rpctypes.ErrUserEmpty) {
		t.Errorf("anonymous Put: got %v, want %v", err, rpctypes.ErrUserEmpty)
	}
	pwFile := filepath.Join(t.TempDir(), "etcd-password")
	if err := os.WriteFile(pwFile, []byte("galepw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	eff, err := config.Resolve(gale.Config{config.GaleEtcdUsername: "gale", config.GaleEtcdPasswordFile: pwFile}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sec, err := SecurityFromConfig(eff)
	if err != nil {
		t.Fatal(err)
	}
	c, err := DialSecure(cl.e.Endpoints, sec)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Put(ctx, "/probe", "gale"); err != nil {
		t.Fatalf("Put as gale: %v", err)
	}
	wrong, err := DialSecure(cl.e.Endpoints, Security{Username: "gale", Password: "guess"})
	if err == nil {
		defer wrong.Close()
		_, err = wrong.Put(ctx, "/probe", "guess")
	}
	if !errors.Is(err, rpctypes.ErrAuthFailed) {
		t.Errorf("Put with a wrong password: got %v, want %v", err, rpctypes.ErrAuthFailed)
	}
}

func TestSecurityFromConfigRefusesHalfASetting(t *testing.T) {
	for _, tt := range []struct {
		cfg  gale.Config
		says string
	}{
		{gale.Config{config.GaleEtcdTLSCert: "c.pem"}, "gale.etcd.tls.key"},
		{gale.Config{config.GaleEtcdTLSKey: "k.pem"}, "gale.etcd.tls.cert"},
		{gale.Config{config.GaleEtcdUsername: "gale"}, "gale.etcd.password"},
		{gale.Config{config.GaleEtcdPassword: "pw"}, "gale.etcd.username"},
		{gale.Config{config.GaleEtcdUsername: "gale", config.GaleEtcdPasswordFile: "/nonexistent/pw"}, "gale.etcd.password.file"},
	} {
		eff, err := config.Resolve(tt.cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := SecurityFromConfig(eff); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%v: got %v, want an error naming %s", tt.cfg, err, tt.says)
		}
	}
}
