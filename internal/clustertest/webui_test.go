//go:build unix

package clustertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium finds the browser TestWebUI drives: Debian's chromium (what
// .ci/run installs), or another Chromium or Chrome on the PATH.
func chromium() (string, bool) {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, true
		}
	}
	return "", false
}

// textOf reads the text of the element with the id, "" while there is
// none, in one evaluation.
func textOf(id string) chromedp.Action[string] {
	return chromedp.Evaluate[string](`(document.getElementById(` + strconv.Quote(id) + `) || {}).textContent || ""`)
}

// TestWebUI drives the web UI of a dev cluster in headless Chromium: the
// word count's page draws its components and shows its acked count
// rising; deactivate, confirmed in the page's dialog, makes the topology
// INACTIVE in the page and in the REST API. It saves a screenshot of the
// page in the test's artifact directory (go test -artifacts keeps it).
func TestWebUI(t *testing.T) {
	needCluster(t)
	browser, ok := chromium()
	if !ok {
		if os.Getenv("CI") == "true" {
			t.Fatal("no chromium on the PATH: .ci/run installs Debian's chromium package")
		}
		t.Skip("no chromium on the PATH (apt-get install chromium)")
	}
	began := time.Now()
	c := Start(t, Options{Supervisors: 1, Config: "supervisor.heartbeat.frequency.secs: 1\n"})
	if code, out, _ := c.Gale(t, "submit", "wordcount", "--nimbus", c.Nimbus, "--json"); code != 0 {
		t.Fatalf("gale submit: exit %d\n%s", code, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1400),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox will not start
		chromedp.DisableGPU,
	)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer func() {
		if err := chromedp.Cancel(bctx); err != nil {
			t.Logf("closing the browser: %v", err)
		}
		bcancel()
	}()

	shoot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		p := filepath.Join(t.ArtifactDir(), name)
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", p)
	}
	// The cluster page lists the word count; its link opens its page.
	if err := chromedp.Do(bctx, chromedp.Navigate(c.UI+"/")); err != nil {
		t.Fatalf("open %s/: %v", c.UI, err)
	}
	row := `#topology-table tr[data-topology="wordcount"] a`
	if err := chromedp.Do(bctx, chromedp.WaitVisible(row)); err != nil {
		t.Fatalf("the cluster page lists no word count: %v", err)
	}
	shoot("cluster.png")
	if err := chromedp.Do(bctx, chromedp.Click(row)); err != nil {
		t.Fatalf("click the word count on the cluster page: %v", err)
	}
	// The graph shows the word count's three components.
	for _, comp := range []string{"sentences", "split", "count"} {
		sel := `svg#graph g.node[data-id="` + comp + `"]`
		if err := chromedp.Do(bctx, chromedp.WaitVisible(sel)); err != nil {
			t.Fatalf("the topology page shows no node %q in its graph: %v", comp, err)
		}
	}
	edges, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("svg#graph path.edge").length`))
	if err != nil || edges != 2 {
		t.Errorf("the graph's edges: got %d (%v), want 2 (sentences → split → count)", edges, err)
	}
	grouping, err := chromedp.Run(bctx, chromedp.AttributeValue(`svg#graph path.edge[data-dst="count"]`, "data-grouping"))
	if err != nil || grouping.Value != "fields" {
		t.Errorf("the edge split → count: grouping %q (%v), want fields", grouping.Value, err)
	}

	// Live numbers: the acked count shown rises while the page is open.
	acked := func() int64 {
		s, err := chromedp.Run(bctx, textOf("stat-acked"))
		if err != nil {
			t.Fatalf("read the acked count: %v", err)
		}
		n, _ := strconv.ParseInt(strings.ReplaceAll(strings.TrimSpace(s), ",", ""), 10, 64)
		return n
	}
	var first int64
	if err := Poll(ctx, func() bool { first = acked(); return first > 0 }); err != nil {
		t.Fatalf("the page shows no tree acked: %v", err)
	}
	var later int64
	if err := Poll(ctx, func() bool { later = acked(); return later > first }); err != nil {
		t.Fatalf("the acked count stays at %d: the page does not update (%v)", first, err)
	}
	t.Logf("the page showed %d trees acked, then %d", first, later)

	// Deactivate, confirmed in the page's dialog.
	if err := chromedp.Do(bctx,
		chromedp.WaitEnabled("#action-deactivate"),
		chromedp.Click("#action-deactivate"),
		chromedp.WaitVisible("#confirm-ok"),
		chromedp.Click("#confirm-ok"),
	); err != nil {
		t.Fatalf("deactivate in the page: %v", err)
	}
	var state string
	if err := Poll(ctx, func() bool {
		var err error
		if state, err = chromedp.Run(bctx, textOf("topology-status")); err != nil {
			t.Fatalf("read the status: %v", err)
		}
		return strings.TrimSpace(state) == "INACTIVE"
	}); err != nil {
		t.Fatalf("after deactivate the page shows the status %q, want INACTIVE", state)
	}
	var summary struct {
		Topologies []struct{ Name, Status string } `json:"topologies"`
	}
	getJSON(t, c.UI+"/api/v1/topology/summary", &summary)
	if len(summary.Topologies) != 1 || summary.Topologies[0].Status != "INACTIVE" {
		t.Errorf("after deactivate in the page, topology/summary: got %+v, want the word count INACTIVE", summary)
	}

	shoot("topology.png")

	// A node of the graph opens its component's page.
	if err := chromedp.Do(bctx, chromedp.Click(`svg#graph g.node[data-id="split"] rect.box`), chromedp.WaitVisible(`#executors table`)); err != nil {
		t.Fatalf("open split's page from the graph: %v", err)
	}
	var name string
	if name, err = chromedp.Run(bctx, textOf("component-name")); err != nil || name != "split" {
		t.Errorf("the component page: name %q (%v), want split", name, err)
	}
	shoot("component.png")
	t.Logf("the test took %s", time.Since(began).Round(time.Second))
}
