package jetstream

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/gale-stream/gale/retry"
)

// letter is a given-up message and its dead letter.
type letter struct {
	h *held
	l retry.DeadLetter
}

// letterBatch is the most dead letters sent in one batch.
const letterBatch = 256

// letterBox sends dead letters on a goroutine the spout owns, so that
// NextTuple, Ack and Fail never wait for the sink. It takes every letter
// waiting (up to letterBatch), in order, sends them in one batch
// (retry.SendAll: one SendBatch if the sink is a retry.BatchSink) and
// waits until they are stored, then terminates their messages. A batch
// that fails extends its messages' ack.wait and is sent again, whole,
// after the policy's backoff (at most half of ack.wait), until it
// succeeds or the spout closes; the letters behind it wait. Its queue
// holds at most max.ack.pending letters: every one is a message the
// server counts unacked, so the spout never has more.
type letterBox struct {
	sink    retry.DeadLetterSink
	policy  retry.Policy
	timeout time.Duration // one Send's
	ackWait time.Duration
	c       *spoutCounters
	log     *slog.Logger

	in     chan *letter
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// left is the batch being sent when the box stopped; read after
	// stop.
	left []*letter
}

func startLetterBox(sink retry.DeadLetterSink, p retry.Policy, timeout, ackWait time.Duration, capacity int, c *spoutCounters, log *slog.Logger) *letterBox {
	ctx, cancel := context.WithCancel(context.Background())
	b := &letterBox{sink: sink, policy: p, timeout: timeout, ackWait: ackWait, c: c, log: log,
		in: make(chan *letter, capacity), cancel: cancel}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.run(ctx)
	}()
	return b
}

// add queues a letter; it never blocks while the spout holds no more
// than max.ack.pending messages.
func (b *letterBox) add(lt *letter) {
	select {
	case b.in <- lt:
	default:
		// Over the bound the server enforces: keep the message unacked
		// rather than block; the server delivers it again after ack.wait.
		b.log.Error("jetstream dead-letter queue full; the message stays unacked", "source", lt.l.Source)
	}
}

func (b *letterBox) run(ctx context.Context) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	batch := make([]*letter, 0, letterBatch)
	for {
		select {
		case <-ctx.Done():
			return
		case lt := <-b.in:
			batch = append(batch[:0], lt)
		}
	more:
		for len(batch) < letterBatch {
			select {
			case lt := <-b.in:
				batch = append(batch, lt)
			default:
				break more
			}
		}
		if !b.deliver(ctx, batch, rng) {
			b.left = append([]*letter(nil), batch...)
			return
		}
		clear(batch)
	}
}

// deliver sends batch until it is stored and terminates its messages;
// false if ctx ended first.
func (b *letterBox) deliver(ctx context.Context, batch []*letter, rng *rand.Rand) bool {
	ls := make([]retry.DeadLetter, len(batch))
	for i, lt := range batch {
		ls[i] = lt.l
	}
	for tries := 1; ; tries++ {
		sctx, cancel := context.WithTimeout(ctx, b.timeout)
		err := retry.SendAll(sctx, b.sink, ls)
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return false
		}
		b.c.deadLetterErrors.Add(1)
		b.log.Error("jetstream dead letters not stored; their messages stay unacked and the letters are sent again",
			"letters", len(ls), "first", ls[0].Source, "try", tries, "err", err)
		for _, lt := range batch {
			_ = lt.h.msg.InProgress()
		}
		t := time.NewTimer(min(b.policy.Backoff(tries, rng.Float64()), b.ackWait/2))
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
	for _, lt := range batch {
		b.c.deadLettered.Add(1)
		terminate(lt, b.c, b.log)
	}
	return true
}

// terminate ends the given-up message at the server.
func terminate(lt *letter, c *spoutCounters, log *slog.Logger) {
	if err := lt.h.msg.TermWithReason(lt.l.Class + ": " + lt.l.LastError); err != nil {
		log.Error("jetstream terminate failed; the server delivers the message again after ack.wait", "source", lt.l.Source, "err", err)
		return
	}
	c.terminated.Add(1)
}

// stop ends the goroutine, waits for it, and returns the letters not
// stored. Idempotent.
func (b *letterBox) stop() []*letter {
	b.cancel()
	b.wg.Wait()
	out := b.left
	b.left = nil
	for {
		select {
		case lt := <-b.in:
			out = append(out, lt)
		default:
			return out
		}
	}
}
