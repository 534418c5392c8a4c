package kafka

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Output reads a topic the topology writes to (its sink's), from the
// start, outside every worker, and counts the id of every event in it
// in a Tally: what was processed, as a user of the output would see it.
// Make it with ReadOutput; Close stops it.
type Output struct {
	Tally *Tally

	cl     *kgo.Client
	cancel context.CancelFunc
	wg     sync.WaitGroup
	bad    atomic.Int64
	err    atomic.Pointer[error]
}

// ReadOutput starts reading topic on brokers (no consumer group: every
// partition, from its start) into a Tally of the ids 0 … n−1.
func ReadOutput(brokers []string, topic string, n int) (*Output, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, fmt.Errorf("benchkafka: output reader: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := &Output{Tally: NewTally(n), cl: cl, cancel: cancel}
	o.wg.Add(1)
	go o.read(ctx) // stopped by Close
	return o, nil
}

func (o *Output) read(ctx context.Context) {
	defer o.wg.Done()
	for ctx.Err() == nil {
		fs := o.cl.PollFetches(ctx)
		fs.EachError(func(t string, p int32, err error) {
			if ctx.Err() == nil {
				err = fmt.Errorf("fetch %s/%d: %w", t, p, err)
				o.err.Store(&err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			id, err := DecodeID(r.Value)
			if err != nil {
				o.bad.Add(1)
				return
			}
			o.Tally.See(id)
		})
	}
}

// Bad is the number of records in the output that are not events.
func (o *Output) Bad() int64 { return o.bad.Load() }

// Err is the latest fetch error, or nil.
func (o *Output) Err() error {
	if p := o.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Close stops the reader and waits for it. The Tally stays readable.
func (o *Output) Close() {
	o.cancel()
	o.wg.Wait()
	o.cl.Close()
}
