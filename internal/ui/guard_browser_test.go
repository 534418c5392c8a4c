package ui

import (
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestWebUIRefusesAFormFromAnotherSite: the attack of issue 22 in a real
// browser. With a nimbus that needs no token (gale demo, gale dev), a
// page of another site that POSTs a form to the UI's deactivate leaves
// the topology running, while the UI's own page still deactivates it.
func TestWebUIRefusesAFormFromAnotherSite(t *testing.T) {
	ev := newOpenEnv(t)
	b := browser(t)
	target := ev.url + "/api/v1/topology/" + ev.id + "/deactivate"
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><form id="f" method="POST" action="%s"><input name="x" value="1"></form><script>document.getElementById("f").submit()</script>`, html.EscapeString(target))
	}))
	t.Cleanup(evil.Close)
	// localhost, not 127.0.0.1: another site to the browser, not only
	// another port.
	page := strings.Replace(evil.URL, "127.0.0.1", "localhost", 1)
	if err := chromedp.Do(b, chromedp.Navigate(page)); err != nil {
		t.Fatal(err)
	}
	// The form's answer replaces the page.
	waitFor(t, b, "the UI's answer to the form", `location.href.startsWith(`+fmt.Sprintf("%q", ev.url)+`) && document.readyState === "complete" && document.body.textContent.includes("topology")`)
	if s := topologyStatus(t, ev); s != "ACTIVE" {
		t.Fatalf("a form POSTed from another site left the topology %s", s)
	}
	if body := eval[string](t, b, `document.body.textContent`); !strings.Contains(body, "another web site") {
		t.Errorf("the UI's answer to the form: %s, want a refusal naming another web site", body)
	}

	// The UI's own page, same origin, with no token needed.
	if err := chromedp.Do(b, chromedp.Navigate(ev.url+"/topology.html?id="+ev.id)); err != nil {
		t.Fatal(err)
	}
	do(t, b, "deactivate in the UI's page",
		chromedp.WaitEnabled("#action-deactivate"),
		chromedp.Click("#action-deactivate"),
		chromedp.WaitVisible("#confirm-ok"),
		chromedp.Click("#confirm-ok"),
	)
	waitFor(t, b, "INACTIVE", text("topology-status")+` === "INACTIVE"`)
	if s := topologyStatus(t, ev); s != "INACTIVE" {
		t.Errorf("after deactivate in the UI's page: the API says %s, want INACTIVE", s)
	}
}
