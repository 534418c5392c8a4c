package kafka_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/connectors/kafka"
)

// greet is a basic bolt handing each value to the example; its input is
// acked when Execute returns.
type greet struct {
	gale.BaseBasicBolt
	out chan<- string
}

func (*greet) DeclareOutputFields(gale.OutputDeclarer) {}

func (g *greet) Execute(t *gale.Tuple, _ *gale.BasicCollector) error {
	g.out <- fmt.Sprintf("%s from partition %d at offset %d",
		t.GetStringByField(kafka.FieldValue), t.GetInt64ByField(kafka.FieldPartition), t.GetInt64ByField(kafka.FieldOffset))
	return nil
}

// Example reads a topic of an in-process Kafka (kfake) with a spout in a
// local topology, at least once: the offsets are committed to the
// consumer group once the tuples are acked.
func Example() {
	cluster, err := kfake.NewCluster(kfake.SeedTopics(1, "greetings"))
	if err != nil {
		panic(err)
	}
	defer cluster.Close()

	producer, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		panic(err)
	}
	for _, v := range []string{"hello", "hola", "bonjour"} {
		if err := producer.ProduceSync(context.Background(), &kgo.Record{Topic: "greetings", Value: []byte(v)}).FirstErr(); err != nil {
			panic(err)
		}
	}
	producer.Close()

	// The map form, as a YAML or JSON configuration would give it.
	cfg, err := kafka.ParseConfig(map[string]any{
		"bootstrap.servers": cluster.ListenAddrs(),
		"topic":             "greetings",
		"group.id":          "example",
		"value.format":      "string",
	})
	if err != nil {
		panic(err)
	}
	spouts, err := kafka.NewSpouts(cfg)
	if err != nil {
		panic(err)
	}
	got := make(chan string)
	b := gale.NewTopologyBuilder()
	b.SetSpout("greetings", spouts.New, 1)
	b.SetBasicBolt("greet", func() gale.BasicBolt { return &greet{out: got} }, 1).ShuffleGrouping("greetings")
	topo, err := b.Build()
	if err != nil {
		panic(err)
	}

	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- gale.RunLocal(ctx, "greetings", gale.Config{}, topo, gale.RunOptions{Logger: slog.New(slog.DiscardHandler)})
	}()
	for range 3 {
		fmt.Println(<-got)
	}
	stop() // an orderly shutdown: the trees in flight complete, then the spout commits
	if err := <-done; err != nil {
		panic(err)
	}
	fmt.Println("offsets committed:", spouts.Stats().Committed)
	// Output:
	// hello from partition 0 at offset 0
	// hola from partition 0 at offset 1
	// bonjour from partition 0 at offset 2
	// offsets committed: 3
}
