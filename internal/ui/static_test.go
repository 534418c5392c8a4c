package ui

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gale-stream/gale/internal/nimbuspb"
)

// TestWebUIIsServed: the handler serves the web UI's pages and scripts at
// / beside the REST API, each page loading only scripts it serves.
func TestWebUIIsServed(t *testing.T) {
	h, err := New(Config{Nimbus: nimbuspb.NewNimbusClient(nil)})
	if err != nil {
		t.Fatal(err)
	}
	get := func(method, path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		return rec
	}
	for _, c := range []struct{ path, ctype, has string }{
		{"/", "text/html", `id="topologies"`},
		{"/topology.html?id=wordcount", "text/html", `id="graph"`},
		{"/component.html?id=split&topology_id=wordcount", "text/html", `id="executors"`},
		{"/common.js", "javascript", "gale.api ="},
		{"/topology.js", "javascript", "deactivate"},
		{"/app.css", "text/css", "--ink"},
	} {
		rec := get("GET", c.path)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Header().Get("Content-Type"), c.ctype) || !strings.Contains(rec.Body.String(), c.has) {
			t.Errorf("GET %s: %d %q, body has %q: %v; want 200 %s", c.path, rec.Code, rec.Header().Get("Content-Type"), c.has, strings.Contains(rec.Body.String(), c.has), c.ctype)
		}
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy %q, want default-src 'self' (the pages load nothing from elsewhere)", c.path, csp)
		}
		if !strings.Contains(c.ctype, "html") {
			continue
		}
		// Every script and stylesheet a page names is served.
		for _, ref := range refs(rec.Body.String()) {
			if r := get("GET", "/"+ref); r.Code != http.StatusOK {
				t.Errorf("%s loads %s, which answers %d", c.path, ref, r.Code)
			}
		}
	}
	if rec := get("GET", "/index.html"); rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "./" {
		t.Errorf("GET /index.html (Storm's path of the cluster page): got %d to %q, want a redirect to /", rec.Code, rec.Header().Get("Location"))
	}
	if rec := get("POST", "/"); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /: got %d, want 405", rec.Code)
	}
	if rec := get("GET", "/nosuch.html"); rec.Code != http.StatusNotFound {
		t.Errorf("GET /nosuch.html: got %d, want 404", rec.Code)
	}
	if rec := get("GET", "/api/v1/nosuch"); rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "errorMessage") {
		t.Errorf("GET /api/v1/nosuch: got %d %s, want the API's 404", rec.Code, rec.Body)
	}
}

// refs are the src="…" and href="…" of a page that are files of the UI.
func refs(page string) []string {
	var out []string
	for _, attr := range []string{`src="`, `href="`} {
		rest := page
		for {
			i := strings.Index(rest, attr)
			if i < 0 {
				break
			}
			rest = rest[i+len(attr):]
			v := rest[:strings.IndexByte(rest, '"')]
			if strings.HasSuffix(v, ".js") || strings.HasSuffix(v, ".css") {
				out = append(out, v)
			}
		}
	}
	return out
}
