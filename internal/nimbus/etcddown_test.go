package nimbus

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/coord/etcdembed"
	"github.com/gale-stream/gale/internal/nimbuspb"
	"github.com/gale-stream/gale/internal/testutil"
)

// A leader whose etcd stops answering steps down once its lease has
// expired, though its reconcile is blocked on etcd then (it reconciles
// every second), so that it takes no reports or calls as a leader it no
// longer is; its reads answer that etcd is out of reach; it leads again
// once etcd is back.
func TestLeaderStepsDownWhileEtcdIsDown(t *testing.T) {
	dir := t.TempDir()
	e, err := etcdembed.Start(etcdembed.Config{Dir: dir, ClientURL: "http://127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	url := e.Endpoints[0]
	c, err := coord.Dial(e.Endpoints)
	if err != nil {
		e.Close()
		t.Fatal(err)
	}
	cl := &cluster{t: t, etcd: e, store: coord.NewStore(c)}
	t.Cleanup(func() {
		cl.store.Close()
		c.Close()
		if cl.etcd != nil { // the etcd running at the end
			cl.etcd.Close()
		}
	})
	nd := cl.startNimbus("n1", "", func(c *Config) {
		c.Cluster = gale.Config{config.NimbusSupervisorTimeoutSecs: 2, config.NimbusMonitorFreqSecs: 1}
	})
	nd.leads()
	cl.etcd.Close()
	cl.etcd = nil
	testutil.Eventually(t, 30*time.Second, "the leader steps down while etcd is down", func() bool { return !nd.n.IsLeader() })
	// The reads say that etcd is out of reach, long before the caller's
	// deadline, rather than keep silent.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = nd.api.ClusterInfo(ctx, &nimbuspb.ClusterInfoRequest{})
	wantCode(t, err, codes.Unavailable, "cannot reach etcd at "+url)
	_, err = nd.api.List(ctx, &nimbuspb.ListRequest{})
	wantCode(t, err, codes.Unavailable, "cannot reach etcd")
	e2, err := etcdembed.Start(etcdembed.Config{Dir: dir, ClientURL: url})
	if err != nil {
		t.Fatalf("restart etcd on %s: %v", url, err)
	}
	cl.etcd = e2
	nd.leads()
}
