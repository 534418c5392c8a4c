package galecli

import (
	"os/exec"
	"strings"
	"testing"
)

// TestUserBinaryLinksNoServers: a user's program, which has Main's
// commands, links no etcd server, no fake Kafka broker and none of the
// stock binary's servers, benches, dev, demo or test topologies
// (internal/stock): those made every user binary 51 MB. examples/readme
// is such a program.
func TestUserBinaryLinksNoServers(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the example's dependencies")
	}
	out, err := exec.Command(goTool, "list", "-deps", "github.com/gale-stream/gale/examples/readme").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const mod = "github.com/gale-stream/gale/internal/"
	// Packages whose paths start with these: etcd's server, and the
	// benches with the test topologies (internal/bench/...).
	prefixes := []string{"go.etcd.io/etcd/server/", mod + "bench"}
	// These packages and those under them.
	trees := []string{"github.com/twmb/franz-go/pkg/kfake", mod + "stock",
		mod + "coord/etcdembed", mod + "nimbus", mod + "supervisor", mod + "devcluster"}
	for _, pkg := range strings.Fields(string(out)) {
		bad := false
		for _, p := range prefixes {
			bad = bad || strings.HasPrefix(pkg, p)
		}
		for _, p := range trees {
			bad = bad || pkg == p || strings.HasPrefix(pkg, p+"/")
		}
		if bad {
			t.Errorf("examples/readme links %s: a user's binary must not (it belongs to the stock gale, internal/stock)", pkg)
		}
	}
}
