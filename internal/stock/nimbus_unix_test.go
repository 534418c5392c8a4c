//go:build unix

package stock

import (
	"context"
	"errors"
	"regexp"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/gale-stream/gale/internal/cli/clitest"
	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/coord/etcdembed"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// TestNimbusServesAndLeavesOnSIGTERM: gale nimbus says where it serves
// once it does, leads a cluster of one, and on SIGTERM resigns and
// leaves the members before it exits 0.
func TestNimbusServesAndLeavesOnSIGTERM(t *testing.T) {
	e, err := etcdembed.Start(etcdembed.Config{Dir: t.TempDir(), ClientURL: "http://127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c, err := coord.Dial(e.Endpoints)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	store := coord.NewStore(c)
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	p := clitest.Start(t, "nimbus", "--dir", t.TempDir(), "--port", "0", "--etcd", e.Endpoints[0], "--id", "n1")
	serving := regexp.MustCompile(`^gale nimbus: serving on (127\.0\.0\.1:\d+) \(id n1\)$`)
	p.WaitLine(t, "the serving line", serving.MatchString)
	var addr string
	for _, l := range regexp.MustCompile(`(?m)^.*$`).FindAllString(p.Stderr(), -1) {
		if m := serving.FindStringSubmatch(l); m != nil {
			addr = m[1]
		}
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	api := nimbuspb.NewNimbusClient(conn)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ci, err := api.ClusterInfo(ctx, &nimbuspb.ClusterInfoRequest{})
		if err == nil && ci.GetLeaderId() == "n1" && ci.GetLeaderAddr() == addr {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ClusterInfo: %v, %v; want n1 leading at %s", ci, err, addr)
		}
		time.Sleep(20 * time.Millisecond)
	}

	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if st := p.Wait(t); st.ExitCode() != exitOK {
		t.Fatalf("exit: %v, want 0", st)
	}
	if l, err := store.Leader(ctx); !errors.Is(err, coord.ErrNotFound) {
		t.Errorf("after SIGTERM: leader %+v, %v; want none (resigned)", l, err)
	}
	if ns, err := store.Nimbuses(ctx); err != nil || len(ns) != 0 {
		t.Errorf("after SIGTERM: members %+v, %v; want none (left)", ns, err)
	}
}
