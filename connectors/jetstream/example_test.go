package jetstream_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/connectors/jetstream"
)

// shipBolt turns an order into a shipping notice.
type shipBolt struct{ gale.BaseBasicBolt }

func (shipBolt) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("data", "order") }

func (shipBolt) Execute(t *gale.Tuple, c *gale.BasicCollector) error {
	order := string(t.GetBytesByField(jetstream.FieldData))
	_, err := c.Emit([]byte("shipped "+order), order)
	return err
}

// Orders flow from the stream ORDERS through a bolt into the stream
// SHIPPED. The spout acks each order once its notice is stored; the sink
// uses the order as the message id, so an order replayed after a crash is
// stored once.
func Example() {
	// An embedded server with JetStream for the example; a topology
	// points url at its own servers.
	dir, _ := os.MkdirTemp("", "gale-jetstream-example")
	defer os.RemoveAll(dir)
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv.Start()
	defer srv.WaitForShutdown()
	defer srv.Shutdown()
	srv.ReadyForConnections(10 * time.Second)
	url := srv.ClientURL()

	nc, _ := nats.Connect(url)
	defer nc.Close()
	js, _ := njs.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js.CreateStream(ctx, njs.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	shipped, _ := js.CreateStream(ctx, njs.StreamConfig{Name: "SHIPPED", Subjects: []string{"shipped.>"}})
	for _, o := range []string{"order-1", "order-2", "order-3"} {
		js.Publish(ctx, "orders.new", []byte(o))
	}

	// The configuration as plain data, as YAML or a multilang front end
	// would give it.
	in, err := jetstream.ParseConfig(map[string]any{
		"url": url, "stream": "ORDERS", "consumer": "shipping",
		"retry.max.attempts": 3, "deadletter.file": filepath.Join(dir, "dead.jsonl"),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := jetstream.ParseConfig(map[string]any{"url": url, "subject": "shipped.orders", "msgid.field": "order"})
	spouts, err := jetstream.NewSpouts(in)
	if err != nil {
		fmt.Println(err)
		return
	}
	sinks, err := jetstream.NewSinks(out)
	if err != nil {
		fmt.Println(err)
		return
	}

	b := gale.NewTopologyBuilder()
	b.SetSpout("orders", spouts.New, 1)
	b.SetBasicBolt("ship", func() gale.BasicBolt { return shipBolt{} }, 1).ShuffleGrouping("orders")
	b.SetBolt("notify", sinks.New, 1).ShuffleGrouping("ship")
	topo, err := b.Build()
	if err != nil {
		fmt.Println(err)
		return
	}

	// Run until every order is acked at the source, then stop.
	run, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer stop()
		for spouts.Stats().Acked < 3 && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
	}()
	err = gale.RunLocal(run, "shipping", nil, topo, gale.RunOptions{Logger: slog.New(slog.DiscardHandler)})
	wg.Wait()
	if err != nil {
		fmt.Println(err)
		return
	}

	for seq := uint64(1); seq <= 3; seq++ {
		m, err := shipped.GetMsg(ctx, seq)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(string(m.Data))
	}
	st := spouts.Stats()
	fmt.Printf("emitted %d, acked %d, failed %d\n", st.Emitted, st.Acked, st.Nacked+st.Terminated)
	// Output:
	// shipped order-1
	// shipped order-2
	// shipped order-3
	// emitted 3, acked 3, failed 0
}
