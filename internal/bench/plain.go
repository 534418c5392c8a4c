package bench

import (
	"context"
	"sync"
	"time"
)

// The plain baseline's shape, as a competent Go programmer would pick it: batches
// amortise the channel operations, a few batches of buffer absorb jitter, and spent
// batches go back to their producer through a free list.
const (
	plainBatch = 100 // sentences per batch
	plainQueue = 4   // batches buffered per channel
)

// PlainRunner is RunPlain as a Runner.
var PlainRunner Runner = RunPlain

// RunPlain is the baseline: the workload written as plain Go, with no framework. Three
// goroutines — generate, split, count — are joined by buffered channels carrying
// batches of plainBatch sentences (generate → split) or the words of plainBatch
// sentences (split → count); the counter keeps a map[string]int64.
//
// The parallelism options and MaxSpoutPending are ignored (one goroutine per stage; the
// channel buffers bound what is in flight). Rate, CountDelay and Mode are honoured. In
// ack mode a sentence counts as acked when the counter has counted all of its words, and
// its latency runs from its scheduled emit time to then; the generator hands over a
// partial batch whenever the pacer makes it wait, so batching does not add latency at
// low rates.
//
// When ctx is done the generator stops, the pipeline drains and RunPlain returns with
// the counts exact: Words == WordsPerSentence × Sentences.
func RunPlain(ctx context.Context, opts Options, stats *Stats) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	newPlain(opts, stats).run(ctx)
	return nil
}

type sentenceBatch struct {
	sentences []string
	sched     []time.Duration // ack mode: scheduled emit time of each sentence, since plain.base
}

type wordBatch struct {
	words     []string
	sentences int             // how many sentences the words came from
	sched     []time.Duration // ack mode: as in sentenceBatch
}

type plain struct {
	opts  Options
	stats *Stats
	ack   bool
	base  time.Time // origin of the sched offsets

	freeSentences chan *sentenceBatch
	freeWords     chan *wordBatch

	counts map[string]int64 // the count stage's result, set when run returns
}

func newPlain(opts Options, stats *Stats) *plain {
	return &plain{
		opts:          opts,
		stats:         stats,
		ack:           opts.Mode == ModeAck,
		base:          time.Now(),
		freeSentences: make(chan *sentenceBatch, plainQueue+2),
		freeWords:     make(chan *wordBatch, plainQueue+2),
	}
}

func (p *plain) run(ctx context.Context) {
	sentences := make(chan *sentenceBatch, plainQueue)
	words := make(chan *wordBatch, plainQueue)
	var wg sync.WaitGroup
	wg.Go(func() { p.generate(ctx, sentences) })
	wg.Go(func() { p.split(sentences, words) })
	wg.Go(func() { p.count(words) })
	wg.Wait()
}

// generate emits sentences until ctx is done, then closes out. Sentences are counted
// when their batch is handed over; a batch still being filled when ctx is done is
// dropped, never counted.
func (p *plain) generate(ctx context.Context, out chan<- *sentenceBatch) {
	defer close(out)
	gen := NewSentenceGen(SpoutSeed(0))
	var pacer *Pacer
	if p.opts.Rate > 0 {
		pacer = NewPacer(p.opts.Rate, time.Now())
	}
	b := p.sentenceBatch()
	p.stats.SpoutActivated(1) // the one generator starts at once
	send := func() bool {
		n := int64(len(b.sentences)) // b belongs to split once sent
		select {
		case out <- b:
			p.stats.Sentences.Add(n)
			b = p.sentenceBatch()
			return true
		case <-ctx.Done():
			return false
		}
	}
	for ctx.Err() == nil {
		for len(b.sentences) < plainBatch {
			var sched time.Time
			if pacer != nil {
				var ok bool
				if sched, ok = pacer.Due(time.Now()); !ok {
					if len(b.sentences) > 0 && !send() {
						return
					}
					var err error
					if sched, err = pacer.Next(ctx); err != nil {
						return
					}
				}
			} else if p.ack {
				sched = time.Now()
			}
			b.sentences = append(b.sentences, gen.Next())
			if p.ack {
				b.sched = append(b.sched, sched.Sub(p.base))
			}
		}
		if !send() {
			return
		}
	}
}

// split cuts every sentence into words until in is closed, then closes out.
func (p *plain) split(in <-chan *sentenceBatch, out chan<- *wordBatch) {
	defer close(out)
	for sb := range in {
		wb := p.wordBatch()
		for _, s := range sb.sentences {
			wb.words = AppendWords(wb.words, s)
		}
		wb.sentences = len(sb.sentences)
		wb.sched, sb.sched = sb.sched, wb.sched[:0]
		p.putSentenceBatch(sb)
		out <- wb // count drains until we close out, so this cannot block forever
	}
}

// count counts every word until in is closed.
func (p *plain) count(in <-chan *wordBatch) {
	counts := make(map[string]int64, VocabularySize)
	delay := p.opts.CountDelay
	for wb := range in {
		for _, w := range wb.words {
			counts[w]++
			if delay > 0 {
				BusyWork(delay)
			}
		}
		p.stats.Words.Add(int64(len(wb.words)))
		if p.ack {
			now := time.Since(p.base)
			for _, s := range wb.sched {
				p.stats.Latency.Record(now - s)
			}
			p.stats.Acked.Add(int64(wb.sentences))
		}
		p.putWordBatch(wb)
	}
	p.counts = counts
}

// The free lists: take a spent batch if one is there, else allocate; give a batch
// back if there is room, else let the GC have it. Neither ever blocks.

func (p *plain) sentenceBatch() *sentenceBatch {
	select {
	case b := <-p.freeSentences:
		return b
	default:
		b := &sentenceBatch{sentences: make([]string, 0, plainBatch)}
		if p.ack {
			b.sched = make([]time.Duration, 0, plainBatch)
		}
		return b
	}
}

func (p *plain) putSentenceBatch(b *sentenceBatch) {
	b.sentences = b.sentences[:0]
	select {
	case p.freeSentences <- b:
	default:
	}
}

func (p *plain) wordBatch() *wordBatch {
	select {
	case b := <-p.freeWords:
		return b
	default:
		b := &wordBatch{words: make([]string, 0, plainBatch*WordsPerSentence)}
		if p.ack {
			b.sched = make([]time.Duration, 0, plainBatch)
		}
		return b
	}
}

func (p *plain) putWordBatch(b *wordBatch) {
	b.words = b.words[:0]
	b.sched = b.sched[:0]
	select {
	case p.freeWords <- b:
	default:
	}
}
