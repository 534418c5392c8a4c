package clustertest

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/netnstest"
)

// TestThreeMachineDeploymentWithSecuredEtcd runs the README's
// three-machine deployment, each machine a network namespace: etcd
// serving TLS that refuses every client without a certificate of the
// cluster's CA (etcd's --client-cert-auth --trusted-ca-file --cert-file
// --key-file), nimbus on two machines, a supervisor on each, one
// gale.yaml with nimbus.auth.token.file and gale.etcd.tls.*. A topology
// runs across the machines (the supervisors download it and report with
// the token, every process reads etcd with its certificate), and an
// anonymous client on another machine gets nothing from etcd.
func TestThreeMachineDeploymentWithSecuredEtcd(t *testing.T) {
	needCluster(t)
	n := netnstest.New(t)
	machines := []*netnstest.Host{n.Host("m1"), n.Host("m2"), n.Host("m3")}

	token := make([]byte, 16)
	rand.Read(token)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(hex.EncodeToString(token)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := NewFleet(t, Options{SlotsPer: 2, EtcdTLS: true, Config: fmt.Sprintf(`nimbus.auth.token.file: %s
supervisor.heartbeat.frequency.secs: 1
`, tokenFile)})
	on := func(h *netnstest.Host) Host { return Host{Addr: h.Addr(), Command: h.Command} }
	f.StartEtcd(t, on(machines[0]))
	if !strings.HasPrefix(f.EtcdURL(), "https://") {
		t.Fatalf("etcd serves %s, want https://", f.EtcdURL())
	}
	f.StartNimbus(t, on(machines[0]))
	f.StartNimbus(t, on(machines[1]))
	for _, m := range machines {
		f.StartSupervisor(t, on(m))
	}
	f.WaitSupervisors(t, 3)

	if code, out, _ := f.Gale(t, "submit", partitionTopology, "-p", "rate=100", "-p", "spouts=1", "--workers", "3"); code != 0 {
		t.Fatalf("gale submit: exit %d\n%s", code, out)
	}
	waitFor(t, "the topology's 3 workers, one per machine, report and ack", func() (bool, string) {
		info, err := f.Get(t.Context(), partitionTopology)
		if err != nil {
			return false, err.Error()
		}
		cur := current(info)
		hosts := map[string]bool{}
		for _, w := range cur {
			hosts[w.Host] = true
		}
		return len(cur) == 3 && len(hosts) == 3 && ackedBy(cur) > 0, describe(info)
	})
	if ts := f.List(t); len(ts) != 1 || ts[0].Name != partitionTopology {
		t.Fatalf("gale list: %+v", ts)
	}
	// The certified client reads the records.
	if _, err := f.Assignment(t.Context(), t, partitionTopology); err != nil {
		t.Fatalf("read the assignment with the client certificate: %v", err)
	}

	// Anonymous access, from the test's own machine (the network's main
	// host): TLS that trusts etcd's CA but presents no certificate, or
	// one of another CA, and plain HTTP to etcd's JSON gateway, where a
	// kv/put of a topology record once deactivated it. etcd refuses each
	// before it reads a request.
	u, err := url.Parse(f.EtcdURL())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(f.tls.ca.CertPEM)
	other := newFleetTLS(t, t.TempDir())
	stranger, err := tls.LoadX509KeyPair(other.client.CertFile, other.client.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	put := `{"key":"` + base64.StdEncoding.EncodeToString([]byte("/probe")) + `","value":"YW5vbnltb3Vz"}`
	for name, certs := range map[string][]tls.Certificate{"no certificate": nil, "another CA's certificate": {stranger}} {
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: certs}}}
		resp, err := hc.Post("https://"+u.Host+"/v3/kv/put", "application/json", strings.NewReader(put))
		if err == nil {
			resp.Body.Close()
			t.Errorf("kv/put with %s: %s, want etcd to refuse the connection", name, resp.Status)
		} else if !strings.Contains(err.Error(), "certificate") {
			t.Errorf("kv/put with %s: got %v, want etcd to refuse the certificate", name, err)
		}
		hc.CloseIdleConnections()
	}
	if resp, err := http.Post("http://"+u.Host+"/v3/kv/put", "application/json", strings.NewReader(put)); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("kv/put over plain HTTP: %s %s, want a refusal", resp.Status, b)
		}
	}
	c, err := coord.DialSecure([]string{f.EtcdURL()}, f.EtcdSecurity())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := c.Get(t.Context(), "/probe"); err != nil || len(got.Kvs) != 0 {
		t.Errorf("after the anonymous puts, /probe: %v, %v; want no key", got, err)
	}

	// gale etcd status, run on machine m3: refused without the cluster's
	// gale.yaml, answered with it.
	run := func(args ...string) (int, string) {
		cmd := machines[2].Command(t.Context(), Binary(), args...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	caOnly := filepath.Join(t.TempDir(), "ca-only.yaml")
	if err := os.WriteFile(caOnly, []byte("gale.etcd.tls.ca: "+f.tls.caFile+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out := run("etcd", "status", "--etcd", f.EtcdURL(), "--file", caOnly); code == 0 {
		t.Errorf("gale etcd status without a client certificate, on m3: exit 0, want a refusal\n%s", out)
	}
	if code, out := run("etcd", "status", "--etcd", f.EtcdURL(), "--file", f.config); code != 0 || !strings.Contains(out, "revision") {
		t.Errorf("gale etcd status with the cluster's gale.yaml, on m3: exit %d\n%s", code, out)
	}
}
