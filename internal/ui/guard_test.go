package ui

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gale-stream/gale/internal/nimbus"
	"github.com/gale-stream/gale/internal/testutil"
)

// newOpenEnv is newEnv on a nimbus that needs no token, as gale demo's
// and gale dev's do: only the guard stands between a web page and the
// cluster.
func newOpenEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, func(c *nimbus.Config) { c.RequireAuth, c.Cluster = false, nil })
}

// send sends a request to the UI with the given headers and returns its
// status and body.
func (ev *env) send(method, path, body string, header map[string]string) (int, string) {
	ev.t.Helper()
	req, err := http.NewRequestWithContext(testutil.Context(ev.t), method, ev.url+path, strings.NewReader(body))
	if err != nil {
		ev.t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ev.t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, b.String()
}

// TestCrossSiteMutationsAreRefused: what a page of another web site can
// make a browser send, a form POST above all, changes nothing; the UI's
// own pages and Storm's REST clients (curl, with JSON or no body) still
// act.
func TestCrossSiteMutationsAreRefused(t *testing.T) {
	ev := newOpenEnv(t)
	deactivate := "/api/v1/topology/" + ev.id + "/deactivate"
	self := strings.TrimPrefix(ev.url, "http://")
	for _, tt := range []struct {
		name   string
		body   string
		header map[string]string
		code   int
	}{
		{"a form POST from another site", "x=1", map[string]string{"Origin": "http://evil.example", "Content-Type": "application/x-www-form-urlencoded"}, http.StatusForbidden},
		{"a form POST a browser marks cross-site", "x=1", map[string]string{"Sec-Fetch-Site": "cross-site", "Content-Type": "application/x-www-form-urlencoded"}, http.StatusForbidden},
		{"a POST from another port of the same host", "", map[string]string{"Origin": "http://127.0.0.1:1", "Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"a POST from a sandboxed page", "", map[string]string{"Origin": "null"}, http.StatusForbidden},
		{"a JSON POST from another site", "{}", map[string]string{"Origin": "http://evil.example", "Content-Type": "application/json"}, http.StatusForbidden},
		{"a form POST without an Origin (an old browser)", "x=1", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, http.StatusUnsupportedMediaType},
		{"a multipart form", "--b--", map[string]string{"Content-Type": "multipart/form-data; boundary=b"}, http.StatusUnsupportedMediaType},
		{"a text/plain POST", "{}", map[string]string{"Content-Type": "text/plain"}, http.StatusUnsupportedMediaType},
		{"a rebound host name", "", map[string]string{"Host": "evil.example:" + self[strings.LastIndex(self, ":")+1:]}, http.StatusForbidden},
	} {
		code, b := ev.send("POST", deactivate, tt.body, tt.header)
		if code != tt.code || !strings.Contains(b, "errorMessage") {
			t.Errorf("%s: got %d %s, want %d with Storm's error shape", tt.name, code, b, tt.code)
		}
		if s := topologyStatus(t, ev); s != "ACTIVE" {
			t.Fatalf("%s changed the status to %s", tt.name, s)
		}
	}
	// A read through a rebound name is refused too: the browser would
	// hand it to the other site's page.
	if code, b := ev.send("GET", "/api/v1/topology/summary", "", map[string]string{"Host": "rebind.evil.example"}); code != http.StatusForbidden {
		t.Errorf("GET with a rebound Host: got %d %s, want 403", code, b)
	}
	for _, host := range []string{self, "localhost", "[::1]:8080"} {
		if code, b := ev.send("GET", "/api/v1/topology/summary", "", map[string]string{"Host": host}); code != http.StatusOK {
			t.Errorf("GET with Host %s: got %d %s, want 200", host, code, b)
		}
	}

	for _, ok := range []struct {
		name, path, body string
		header           map[string]string
		status           string
	}{
		{"curl -X POST (no Origin, no body)", deactivate, "", nil, "INACTIVE"},
		{"the UI's own page", "/api/v1/topology/" + ev.id + "/activate", "", map[string]string{"Origin": ev.url, "Sec-Fetch-Site": "same-origin"}, "ACTIVE"},
		{"a JSON body with a charset", deactivate, "{}", map[string]string{"Content-Type": "application/json; charset=utf-8"}, "INACTIVE"},
	} {
		if code, b := ev.send("POST", ok.path, ok.body, ok.header); code != http.StatusOK {
			t.Errorf("%s: got %d %s, want 200", ok.name, code, b)
		}
		if s := topologyStatus(t, ev); s != ok.status {
			t.Errorf("after %s: status %s, want %s", ok.name, s, ok.status)
		}
	}
}
