package coord

import (
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Dial connects to etcd at endpoints. It does not wait for a connection:
// the first call does, within its context.
func Dial(endpoints []string) (*clientv3.Client, error) {
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("coord: etcd at %v: %w", endpoints, err)
	}
	return c, nil
}
