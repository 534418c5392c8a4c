package jetstream

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/gale-stream/gale/internal/backoff"
)

// fetcher pulls messages from the consumer on its own goroutine and hands
// them to the spout through a bounded channel. One pull at a time asks for
// the task's share of max.ack.pending: the server hands out due
// redeliveries before new messages, so a smaller pull would bring only
// redeliveries in a failure storm and the fair share would never see a
// new message. What the pull brings waits in the client's buffer (at most
// the pull's size) until the channel has room; the server's
// max.ack.pending caps what the spout holds in all.
type fetcher struct {
	cons njs.Consumer
	pull int
	wait time.Duration
	log  *slog.Logger
	now  func() time.Time
	out  chan fetched

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startFetcher starts the goroutine; stop ends it and waits.
func startFetcher(ctx context.Context, cons njs.Consumer, pull int, wait time.Duration, now func() time.Time, log *slog.Logger) *fetcher {
	ctx, cancel := context.WithCancel(ctx)
	f := &fetcher{cons: cons, pull: pull, wait: wait, now: now, log: log, out: make(chan fetched, min(pull, handOver)), cancel: cancel}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.run(ctx)
	}()
	return f
}

func (f *fetcher) run(ctx context.Context) {
	wait := backoff.Doubling{Min: f.wait, Max: 30 * f.wait}
	fails := 0
	for ctx.Err() == nil {
		err := f.fetchOnce(ctx, f.pull)
		if err == nil || ctx.Err() != nil {
			fails = 0
			continue
		}
		fails++
		errWait := wait.Delay(fails)
		// The server is unreachable or the consumer is gone: say so and
		// try again, waiting longer each time (up to 30 pulls' wait).
		f.log.Warn("jetstream fetch failed", "err", err, "retry_in", errWait)
		t := time.NewTimer(errWait)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// fetchOnce sends one pull for up to n messages and hands over what it
// delivers. A pull that expires with nothing is not an error. The pull's
// end is the server's: its expiry (fetch.max.wait.ms) ends the batch after
// every message sent before it. (A client-side deadline could end the
// batch with messages received and not handed over, which the server
// would then hold until ack.wait.) Once ctx ends, the pull is still read to
// its end and what it brings is given back with a negative ack.
func (f *fetcher) fetchOnce(ctx context.Context, n int) error {
	b, err := f.cons.Fetch(n, njs.FetchMaxWait(f.wait))
	if err != nil {
		return err
	}
	for m := range b.Messages() {
		if ctx.Err() == nil {
			select {
			case f.out <- fetched{m, f.now()}:
				continue
			case <-ctx.Done():
			}
		}
		// Stopping: give it back at once rather than after ack.wait.
		_ = m.Nak()
	}
	if err := b.Error(); err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && !errors.Is(err, njs.ErrNoMessages) {
		return err
	}
	return nil
}

// fetched is a message and when the client had it: its ack.wait runs
// from about then.
type fetched struct {
	msg njs.Msg
	at  time.Time
}

// handOver is the most messages waiting in the hand-over channel.
const handOver = 256

// stop ends the goroutine and waits for it. Idempotent.
func (f *fetcher) stop() {
	f.cancel()
	f.wg.Wait()
}
