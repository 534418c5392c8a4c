package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gale-stream/gale/internal/nimbuspb"
)

// browser starts headless Chromium for the test, or skips it where there
// is none (and fails it under CI=true, where .ci/run installs it). The
// browser closes at the end of the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	var path string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no chromium on the PATH: .ci/run installs Debian's chromium package")
		}
		t.Skip("no chromium on the PATH (apt-get install chromium)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1200),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox will not start
		chromedp.DisableGPU,
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		if err := chromedp.Cancel(bctx); err != nil {
			t.Logf("closing the browser: %v", err)
		}
		bcancel()
		acancel()
	})
	return bctx
}

// flaky is a Nimbus whose reads fail as an unreachable nimbus's do while
// down is set.
type flaky struct {
	Nimbus
	down atomic.Bool
}

func (f *flaky) unreachable() error {
	return status.Error(codes.Unavailable, "no nimbus answers at 127.0.0.1:6627 (test)")
}

func (f *flaky) List(ctx context.Context, in *nimbuspb.ListRequest, opts ...grpc.CallOption) (*nimbuspb.ListResponse, error) {
	if f.down.Load() {
		return nil, f.unreachable()
	}
	return f.Nimbus.List(ctx, in, opts...)
}

func (f *flaky) Get(ctx context.Context, in *nimbuspb.GetRequest, opts ...grpc.CallOption) (*nimbuspb.TopologyInfo, error) {
	if f.down.Load() {
		return nil, f.unreachable()
	}
	return f.Nimbus.Get(ctx, in, opts...)
}

func (f *flaky) ClusterInfo(ctx context.Context, in *nimbuspb.ClusterInfoRequest, opts ...grpc.CallOption) (*nimbuspb.ClusterInfoResponse, error) {
	if f.down.Load() {
		return nil, f.unreachable()
	}
	return f.Nimbus.ClusterInfo(ctx, in, opts...)
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, b context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(b, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// do runs the actions in the page, failing the test with what if they
// do not complete within 30 s.
func do(t *testing.T, b context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// setValue sets the value of the input sel selects, as typing would.
func setValue(t *testing.T, b context.Context, sel, v string) {
	t.Helper()
	if !eval[bool](t, b, `(() => { const e = document.querySelector(`+strconv.Quote(sel)+`); if (!e) return false; e.value = `+strconv.Quote(v)+`; e.dispatchEvent(new Event("input", {bubbles: true})); return true })()`) {
		t.Fatalf("the page has no input %s", sel)
	}
}

// waitFor polls the page until the JavaScript expression is true.
func waitFor(t *testing.T, b context.Context, what, expr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b, 30*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr)); err != nil {
		t.Fatalf("%s: the page never showed it (%s): %v", what, expr, err)
	}
}

func text(id string) string {
	return `((document.getElementById(` + strconv.Quote(id) + `) || {}).textContent || "")`
}

// TestWebUIStates drives the topology page on a nimbus that requires its
// token: it shows the errors the workers reported with their component
// and task; an action without the token is refused and says how to give
// it; with the token given in the page, deactivate, activate and
// rebalance work from their dialogs; an unreachable nimbus shows what is
// wrong; a kill cancelled does nothing, a kill confirmed leaves the page
// saying the topology is gone; the cluster page without topologies says
// how to submit one.
func TestWebUIStates(t *testing.T) {
	ev := newEnv(t)
	// A supervisor's reports, each second, as long as the test runs: the
	// browser may take a while to start on a busy machine, and nimbus
	// forgets a supervisor's report after its timeout.
	report := ev.detailReport(time.Now().Add(-time.Minute))
	ev.reportDetail(time.Now().Add(-time.Minute))
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tk := time.NewTicker(time.Second)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := ev.sup.Report(ctx, report)
				cancel()
				if err != nil {
					t.Logf("Report: %v", err)
				}
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-stopped })
	nb := &flaky{Nimbus: ev.api}
	h, err := New(Config{Nimbus: nb})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	b := browser(t)

	if err := chromedp.Do(b, chromedp.Navigate(srv.URL+"/topology.html?id=wordcount")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, b, "the graph", `document.querySelectorAll("svg#graph g.node").length === 3`)
	waitFor(t, b, "the reported errors", `document.querySelectorAll("#error-table tbody tr .error-text").length === 2`)
	// The latest first: split's task 5, on the second worker.
	row := eval[[]string](t, b, `[...document.querySelectorAll("#error-table tbody tr")[0].cells].map(c => c.textContent)`)
	if len(row) != 5 || row[1] != "split" || row[2] != "5" || row[3] != "127.0.0.1:6701" || !strings.HasPrefix(row[4], "split: bad sentence 1") {
		t.Errorf("the latest error's row: got %q, want split, task 5, 127.0.0.1:6701, its error", row)
	}
	if got := eval[string](t, b, `document.querySelector('#component-table tr[data-component="split"]').textContent`); !strings.Contains(got, "split: bad sentence 1") {
		t.Errorf("split's row in the component table: %q, want its last error", got)
	}

	deactivate := func() {
		t.Helper()
		do(t, b, "deactivate in the page",
			chromedp.WaitEnabled("#action-deactivate"),
			chromedp.Click("#action-deactivate"),
			chromedp.WaitVisible("#confirm-ok"),
			chromedp.Click("#confirm-ok"),
		)
	}
	// Without the token: refused, and the page says what to do.
	deactivate()
	waitFor(t, b, "the refusal", text("banner")+`.includes("Set token")`)
	if s := topologyStatus(t, ev); s != "ACTIVE" {
		t.Fatalf("a deactivate without the token left the topology %s", s)
	}

	// The token given in the page: kept for the tab, sent with the action.
	do(t, b, "set the token in the page",
		chromedp.Click("#token-button"),
		chromedp.WaitVisible("#token-input"),
		chromedp.SendKeys("#token-input", token),
		chromedp.Click("#confirm-ok"),
	)
	if got := eval[string](t, b, `sessionStorage.getItem("gale.nimbus.token") || ""`); got != token {
		t.Errorf("the token kept: %q, want %q", got, token)
	}
	deactivate()
	waitFor(t, b, "INACTIVE", text("topology-status")+` === "INACTIVE"`)
	if s := topologyStatus(t, ev); s != "INACTIVE" {
		t.Errorf("after deactivate in the page: the API says %s, want INACTIVE", s)
	}
	// The action's message outlives the next poll: the page does not
	// shift under the pointer every 2 s.
	updated := eval[string](t, b, text("updated"))
	waitFor(t, b, "a poll after the deactivate", text("updated")+` !== `+strconv.Quote(updated))
	if msg := eval[string](t, b, text("banner")); !strings.Contains(msg, "Deactivated") {
		t.Errorf("after a poll the banner says %q, want the deactivate's message", msg)
	}
	shot(t, b, "topology-states.png")
	do(t, b, "activate in the page", chromedp.WaitEnabled("#action-activate"), chromedp.Click("#action-activate"), chromedp.WaitVisible("#confirm-ok"), chromedp.Click("#confirm-ok"))
	waitFor(t, b, "ACTIVE again", text("topology-status")+` === "ACTIVE"`)

	// Rebalance from its dialog: one worker, split on two executors.
	do(t, b, "open the rebalance dialog", chromedp.Click("#action-rebalance"), chromedp.WaitVisible("#rebalance-workers"))
	setValue(t, b, "#rebalance-wait", "0")
	setValue(t, b, "#rebalance-workers", "1")
	setValue(t, b, `#confirm input[data-component="split"]`, "2")
	do(t, b, "confirm the rebalance", chromedp.Click("#confirm-ok"))
	deadline := time.Now().Add(30 * time.Second)
	for {
		tp := ev.get("/api/v1/topology/" + ev.id)
		bolts := list(t, "bolts", tp["bolts"])
		if fmt.Sprint(tp["workersTotal"]) == "1" && fmt.Sprint(bolts[0]["executors"]) == "2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the page's rebalance to 1 worker and split×2: got %v", tp)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Nimbus unreachable: the page says so, keeps the last numbers, and
	// recovers by itself.
	nb.down.Store(true)
	waitFor(t, b, "nimbus unreachable", text("banner")+`.includes("Nimbus is unreachable")`)
	if !eval[bool](t, b, `document.getElementById("content").classList.contains("stale")`) {
		t.Error("with nimbus unreachable the page's numbers are not marked stale")
	}
	nb.down.Store(false)
	waitFor(t, b, "recovered", `document.getElementById("banner").hidden && !document.getElementById("content").classList.contains("stale")`)

	// Kill: cancelled in its dialog, nothing happens; confirmed, the
	// topology goes and the page says so.
	do(t, b, "cancel a kill in the page", chromedp.Click("#action-kill"), chromedp.WaitVisible("#confirm-cancel"), chromedp.Click("#confirm-cancel"))
	if code, _ := ev.do("GET", "/api/v1/topology/"+ev.id, "", ""); code != http.StatusOK {
		t.Fatalf("a cancelled kill: the topology answers %d, want 200", code)
	}
	do(t, b, "kill in the page",
		chromedp.Click("#action-kill"),
		chromedp.WaitVisible("#kill-wait"))
	setValue(t, b, "#kill-wait", "0")
	do(t, b, "confirm the kill",
		chromedp.Click("#confirm-ok"),
	)
	waitFor(t, b, "the topology gone", `document.getElementById("gone") !== null && `+text("topology-status")+` === "GONE"`)

	do(t, b, "open the cluster page", chromedp.Navigate(srv.URL+"/"))
	waitFor(t, b, "no topologies", `document.getElementById("no-topologies") !== null`)
	if got := eval[string](t, b, text("no-topologies")); !strings.Contains(got, "gale submit") {
		t.Errorf("the cluster page without topologies says %q, want how to submit one", got)
	}
	if got := eval[string](t, b, text("stat-supervisors")); got != "1" {
		t.Errorf("the cluster page's supervisors: %q, want 1", got)
	}
}

// shot saves a screenshot of the page in the test's artifact directory.
func shot(t *testing.T, b context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(b, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	p := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
}
