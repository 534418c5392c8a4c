package kafka

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Produce writes the events with ids from … to−1 to topic, in id order,
// each keyed by its id, and returns once the broker has acknowledged
// every one (or with the first error). rate > 0 paces it to about rate
// records per second; 0 writes as fast as the client can.
func Produce(ctx context.Context, brokers []string, topic string, from, to int64, rate float64) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(0), kgo.MaxBufferedRecords(10000))
	if err != nil {
		return fmt.Errorf("benchkafka: producer: %w", err)
	}
	defer cl.Close()
	p := newPacer(rate)
	defer p.stop()
	var (
		mu    sync.Mutex
		first error
	)
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			if first == nil {
				first = err
			}
			mu.Unlock()
		}
	}
	for id := from; id < to; id++ {
		if err := p.wait(ctx); err != nil {
			break
		}
		r := &kgo.Record{Key: strconv.AppendInt(nil, id, 10), Value: AppendEvent(make([]byte, 0, 96), id)}
		cl.Produce(ctx, r, done) // blocks while MaxBufferedRecords are buffered
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("benchkafka: produce to %s: %w", topic, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if first != nil {
		return fmt.Errorf("benchkafka: produce to %s: %w", topic, first)
	}
	return ctx.Err()
}
