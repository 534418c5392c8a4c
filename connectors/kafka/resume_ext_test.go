package kafka_test

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gale-stream/gale"
)

// TestCommitWithoutMetadataWhenRefused: brokers whose
// offset.metadata.max.bytes is too small for the open offsets refuse a
// commit with metadata; the spout commits without it from then on, so
// the commit point still moves.
func TestCommitWithoutMetadataWhenRefused(t *testing.T) {
	const topic = "nometa"
	c := newCluster(t, 1, topic)
	produce(t, c, topic, 1, 0, 20)
	c.ControlKey(int16(kmsg.OffsetCommit), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.OffsetCommitRequest)
		withMeta := false
		for _, rt := range r.Topics {
			for _, rp := range rt.Partitions {
				withMeta = withMeta || rp.Metadata != nil && strings.HasPrefix(*rp.Metadata, "gale1:")
			}
		}
		if !withMeta {
			return nil, nil, false
		}
		resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, rt := range r.Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.OffsetMetadataTooLarge.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	sp := mustSpouts(t, spoutConfig(c, topic, "g"))
	s := newSeen()
	b := gale.NewTopologyBuilder()
	b.SetSpout("kafka", sp.New, 1)
	b.SetBolt("hold", func() gale.Bolt { return &holdBolt{s: s, hold: "5"} }, 1).ShuffleGrouping("kafka")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	lt, err := gale.StartLocal(topic, gale.Config{gale.TopologyShutdownDrainTimeoutSecs: 0}, topo, gale.RunOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer lt.Stop()
	until(func() bool { return committed(t, c, "g", topic)[0] == 5 })
	if st := sp.Stats(); st.CommitFailures < 1 {
		t.Errorf("commit failures %d, want the refused one counted", st.CommitFailures)
	}
}
