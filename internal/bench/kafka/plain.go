package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ConsumePlain is the paper's first experiment: a bare franz-go consumer
// in group group reads topic from its start in one loop, decodes every
// record's value (DecodeID) and counts its id in tally, with no
// framework, until tally is complete. It returns nil then, ctx's error
// if ctx ends first, or the first error of a fetch or a decode.
func ConsumePlain(ctx context.Context, brokers []string, topic, group string, tally *Tally) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return fmt.Errorf("benchkafka: consumer: %w", err)
	}
	defer cl.Close()
	for !tally.Complete() {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if ferr == nil && !errors.Is(err, context.Canceled) {
				ferr = fmt.Errorf("benchkafka: fetch %s/%d: %w", t, p, err)
			}
		})
		if ferr != nil {
			return ferr
		}
		var derr error
		fs.EachRecord(func(r *kgo.Record) {
			id, err := DecodeID(r.Value)
			if err != nil {
				if derr == nil {
					derr = fmt.Errorf("%s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
				}
				return
			}
			tally.See(id)
		})
		if derr != nil {
			return derr
		}
	}
	return nil
}
