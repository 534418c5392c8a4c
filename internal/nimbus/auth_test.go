package nimbus

import (
	"context"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/nimbuspb"
	"github.com/gale-stream/gale/internal/testutil"
)

// publicReads are the calls the README and the proto document as open:
// the reads Storm's UI serves without a login.
var publicReads = map[protoreflect.Name]bool{"List": true, "Get": true, "ClusterInfo": true}

// TestEveryCallButThePublicReadsNeedsTheToken calls every method of the
// Nimbus service, as its descriptor lists them (a method added later is
// in the table without anyone adding it), without a token, with wrong
// ones and with the right one.
func TestEveryCallButThePublicReadsNeedsTheToken(t *testing.T) {
	cl := newCluster(t)
	cl.supervisor("s1", 6700, 6701)
	nd := cl.startNimbus("n1", "", func(c *Config) {
		c.RequireAuth = true
		c.Cluster = gale.Config{config.NimbusAuthToken: "s3cret"}
	})
	nd.leads()

	svc := nimbuspb.File_gale_nimbus_v1_nimbus_proto.Services().ByName("Nimbus")
	methods := svc.Methods()
	if methods.Len() != len(nimbuspb.Nimbus_ServiceDesc.Methods)+len(nimbuspb.Nimbus_ServiceDesc.Streams) {
		t.Fatalf("the descriptor has %d methods, the service %d", methods.Len(), len(nimbuspb.Nimbus_ServiceDesc.Methods)+len(nimbuspb.Nimbus_ServiceDesc.Streams))
	}
	for i := range methods.Len() {
		m := methods.Get(i)
		full := "/" + string(svc.FullName()) + "/" + string(m.Name())
		t.Run(string(m.Name()), func(t *testing.T) {
			for _, auth := range []string{"", "Bearer wrong", "Bearer s3cre", "Bearer s3cret ", "s3cret", "Basic s3cret", "bearer s3cret"} {
				ctx := testutil.Context(t)
				if auth != "" {
					ctx = metadataCtx(t, auth)
				}
				err := invoke(ctx, nd.conn, m, full)
				got := status.Code(err)
				if publicReads[m.Name()] {
					if got == codes.Unauthenticated {
						t.Errorf("%s with authorization %q: got %v, want it answered (a documented public read)", full, auth, err)
					}
					continue
				}
				if got != codes.Unauthenticated {
					t.Errorf("%s with authorization %q: got %v (code %v), want Unauthenticated", full, auth, err, got)
				}
			}
			if err := invoke(metadataCtx(t, "Bearer s3cret"), nd.conn, m, full); status.Code(err) == codes.Unauthenticated {
				t.Errorf("%s with the token: got %v, want it past the token check", full, err)
			}
		})
	}
	if ts := cl.topologies(); len(ts) != 0 {
		t.Errorf("the calls stored topologies: %+v", ts)
	}
}

// invoke calls method m with an empty request and returns the error the
// server answered with (nil for success).
func invoke(ctx context.Context, conn *grpc.ClientConn, m protoreflect.MethodDescriptor, full string) error {
	in := dynamicpb.NewMessage(m.Input())
	out := dynamicpb.NewMessage(m.Output())
	if !m.IsStreamingClient() && !m.IsStreamingServer() {
		return conn.Invoke(ctx, full, in, out)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	desc := &grpc.StreamDesc{StreamName: string(m.Name()), ClientStreams: m.IsStreamingClient(), ServerStreams: m.IsStreamingServer()}
	s, err := conn.NewStream(ctx, desc, full)
	if err != nil {
		return err
	}
	if err := s.SendMsg(in); err != nil && err != io.EOF {
		return err
	}
	if err := s.CloseSend(); err != nil {
		return err
	}
	for {
		if err := s.RecvMsg(out); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// A standby nimbus downloads the artifacts it replicates with the
// cluster's token, now that Download needs it.
func TestStandbyReplicatesWithTheToken(t *testing.T) {
	cl := newCluster(t)
	cl.supervisor("s1", 6700, 6701)
	auth := func(c *Config) {
		c.RequireAuth = true
		c.Cluster = gale.Config{config.NimbusAuthToken: "s3cret"}
	}
	a := cl.startNimbus("a", "", auth)
	a.leads()
	sub := newSubmission("wc", 1, 1)
	if _, err := a.submit(metadataCtx(t, "Bearer s3cret"), sub); err != nil {
		t.Fatalf("Submit with the token: %v", err)
	}
	b := cl.startNimbus("b", "", auth)
	testutil.Eventually(t, 30*time.Second, "the standby replicates the artifact", func() bool { return b.holds(sub.header.Artifact.Sha256) })
}
