package coord

import (
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	grpcbackoff "google.golang.org/grpc/backoff"
)

// Dial connects to etcd at endpoints. It does not wait for a connection:
// the first call does, within its context.
//
// A lost connection is retried at most 2 s apart (gRPC's default backs
// off to 2 minutes, which would keep a process away long after etcd
// returned), and a connection that stops answering is dropped after
// 15 s of silence on it, so a partition heals with a fresh one.
func Dial(endpoints []string) (*clientv3.Client, error) {
	c, err := clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          5 * time.Second,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           grpcbackoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
			MinConnectTimeout: 5 * time.Second,
		})},
		Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("coord: etcd at %v: %w", endpoints, err)
	}
	return c, nil
}
