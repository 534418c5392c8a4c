package cli

import (
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// post sends POST url with the Authorization header auth ("" for none)
// and returns the status and body.
func post(t *testing.T, url, auth string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestUIForwardsTheCallersTokenOnly: a mutation through the UI carries
// the caller's Authorization header to nimbus, and never the token of the
// UI's own gale.yaml.
func TestUIForwardsTheCallersTokenOnly(t *testing.T) {
	t.Parallel()
	f := startFakeNimbus(t, nil)
	conf := writeFile(t, "gale.yaml", "nimbus.auth.token: the-uis-own\n")
	cc, err := (&ClusterFlags{File: conf, Nimbus: f.addr}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	s, err := StartUI("127.0.0.1:0", cc)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	for _, auth := range []string{"", "Bearer the-callers"} {
		if code, body := post(t, "http://"+s.Addr+"/api/v1/topology/wc/deactivate", auth); code != http.StatusOK {
			t.Fatalf("deactivate with %q: %d %s", auth, code, body)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if want := []string{"", "Bearer the-callers"}; !slices.Equal(f.auth, want) {
		t.Errorf("the authorization nimbus got: %q, want %q", f.auth, want)
	}
	if !slices.Equal(f.deactivate, []string{"wc", "wc"}) {
		t.Errorf("deactivated: %v, want wc twice", f.deactivate)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
}

// TestUIRefindsTheLeader: when the leader the UI calls has stepped down,
// the UI finds the new one and the mutation lands there.
func TestUIRefindsTheLeader(t *testing.T) {
	t.Parallel()
	seed := startFakeNimbus(t, nil)
	stale := startFakeNimbus(t, nil)
	fresh := startFakeNimbus(t, nil)
	seed.setLeader(stale.addr)
	stale.mu.Lock()
	stale.leader, stale.standby = fresh.addr, true
	stale.onMutate = func() { seed.setLeader(fresh.addr) }
	stale.mu.Unlock()
	s, err := StartUI("127.0.0.1:0", ClientConfig{Seeds: []string{seed.addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if code, body := post(t, "http://"+s.Addr+"/api/v1/topology/wordcount/kill/0", ""); code != http.StatusOK {
		t.Fatalf("kill: %d %s", code, body)
	}
	fresh.mu.Lock()
	defer fresh.mu.Unlock()
	if len(fresh.kills) != 1 {
		t.Errorf("the new leader got %d kills, want 1", len(fresh.kills))
	}
}

// TestUIBusyPort: gale ui on a port another program holds fails at once,
// naming the address.
func TestUIBusyPort(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	code, _, stderr := runGale(t, "ui", "--addr", taken.Addr().String(), "--nimbus", "127.0.0.1:1")
	if code != exitRuntime || !strings.Contains(stderr, "cannot serve on "+taken.Addr().String()) {
		t.Errorf("exit %d, stderr %q: want 1 naming the address", code, stderr)
	}
	code, _, stderr = runGale(t, "ui", "--addr", "8080")
	if code != exitUsage || !strings.Contains(stderr, "--addr wants host:port") {
		t.Errorf("--addr 8080: exit %d, stderr %q: want a usage error", code, stderr)
	}
}
