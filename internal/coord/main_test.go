package coord

import (
	"net/url"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"github.com/gale-stream/gale/internal/coord/etcdembed"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// cluster is one embedded etcd with a client and a Store on it, closed
// by the test's cleanup.
type cluster struct {
	t   *testing.T
	dir string
	url string // the client URL, with the port it got
	e   *etcdembed.Etcd
	c   *clientv3.Client
	s   *Store
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	cl := &cluster{t: t, dir: t.TempDir(), url: "http://127.0.0.1:0"}
	cl.startEtcd()
	u, err := url.Parse(cl.e.Endpoints[0])
	if err != nil {
		t.Fatal(err)
	}
	cl.url = "http://" + u.Host
	cl.c = dial(t, cl.e.Endpoints)
	cl.s = NewStore(cl.c)
	t.Cleanup(func() {
		cl.s.Close()
		cl.c.Close()
		if cl.e != nil {
			cl.e.Close()
		}
	})
	return cl
}

func (cl *cluster) startEtcd() {
	cl.t.Helper()
	e, err := etcdembed.Start(etcdembed.Config{Dir: cl.dir, ClientURL: cl.url})
	if err != nil {
		cl.t.Fatal(err)
	}
	cl.e = e
}

// restartEtcd stops the etcd and starts it again on the same data and
// port, calling during while it is down.
func (cl *cluster) restartEtcd(during func()) {
	cl.t.Helper()
	cl.e.Close()
	cl.e = nil
	during()
	cl.startEtcd()
}

func dial(t *testing.T, endpoints []string) *clientv3.Client {
	t.Helper()
	c, err := Dial(endpoints)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// received says whether ch has a value or is closed, within d.
func received(ch <-chan struct{}, d time.Duration) bool {
	// Look first: with d = 0 the timer may be ready too, and select
	// would pick either.
	select {
	case <-ch:
		return true
	default:
	}
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}
