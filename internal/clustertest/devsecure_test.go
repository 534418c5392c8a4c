//go:build unix

package clustertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/testutil"
)

// TestDevRunsOnASecuredEtcd: given a gale.yaml with gale.etcd.tls.* and
// gale.etcd.username, gale dev serves its etcd with TLS and client
// certificates and turns on etcd's auth for that user; its nimbus and
// supervisors reach it with those settings and run a topology, and a
// client without the password, or without a certificate, gets nothing.
func TestDevRunsOnASecuredEtcd(t *testing.T) {
	needCluster(t)
	dir := t.TempDir()
	ca := testutil.NewCA(t)
	caFile := ca.WriteCA(t, dir)
	cert, key := ca.Issue(t, "gale", "127.0.0.1", "localhost").Write(t, dir, "gale")
	pwFile := filepath.Join(dir, "etcd-password")
	if err := os.WriteFile(pwFile, []byte("dev-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := Start(t, Options{Supervisors: 1, Config: fmt.Sprintf(`supervisor.heartbeat.frequency.secs: 1
gale.etcd.tls.ca: %s
gale.etcd.tls.cert: %s
gale.etcd.tls.key: %s
gale.etcd.username: gale
gale.etcd.password.file: %s
`, caFile, cert, key, pwFile)})
	if !strings.HasPrefix(c.Etcd, "https://127.0.0.1:") {
		t.Fatalf("dev's etcd serves %s, want https://127.0.0.1:PORT", c.Etcd)
	}
	if code, out, _ := c.Gale(t, "submit", "wordcount", "--nimbus", c.Nimbus, "--json"); code != 0 {
		t.Fatalf("gale submit: exit %d\n%s", code, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var last []Topology
	if err := Poll(ctx, func() bool {
		last = c.List(t)
		return len(last) == 1 && last[0].Acked > 0
	}); err != nil {
		t.Fatalf("no tree acked within 2 minutes of submit; last list: %+v", last)
	}

	// etcd takes a client certificate's common name for the user when
	// auth is on: a certificate of the CA for another name, without the
	// password, is no user of etcd.
	otherCert, otherKey := ca.Issue(t, "someone").Write(t, dir, "someone")
	anon, err := coord.DialSecure([]string{c.Etcd}, coord.Security{CAFile: caFile, CertFile: otherCert, KeyFile: otherKey})
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	if _, err := anon.Get(ctx, "/"); err == nil {
		t.Errorf("Get with another name's certificate and no password: got nothing refused")
	} else {
		t.Logf("Get with another name's certificate and no password: %v", err)
	}
	tlsOnly := coord.Security{CAFile: caFile, CertFile: cert, KeyFile: key}
	user := tlsOnly
	user.Username, user.Password = "gale", "dev-secret"
	cl, err := coord.DialSecure([]string{c.Etcd}, user)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if resp, err := cl.Get(ctx, "/"); err != nil {
		t.Errorf("Get as gale with the certificate: %v", err)
	} else {
		t.Logf("etcd at revision %d", resp.Header.Revision)
	}
}
