// Package bench is the harness behind `gale bench wordcount`: a fixed word-count workload,
// the measurements taken while it runs, and the report printed at the end.
//
// The workload is the same for every runner: spouts emit sentences of
// [WordsPerSentence] words drawn uniformly from a fixed vocabulary of [VocabularySize]
// words ([SentenceGen]), a split stage cuts them into words ([SplitWords]) and a count
// stage keeps a count per word. A [Runner] implements that pipeline — [RunPlain] with
// plain goroutines and channels as the baseline, the Gale topology in internal/bench/wordcount —
// and [Run] drives it for [Options.Duration] while sampling throughput, latency, CPU and
// memory.
//
// What a Runner must do:
//
//   - Run until ctx is done, then stop emitting, drain what is in flight and return nil
//     (or an error if the run itself failed). It must stop and wait for every goroutine
//     it started before returning.
//   - Call [Stats.SpoutActivated] as each spout task is activated ([Options.SpoutTasks]
//     of them): Run measures from when all are, not from the start, so that start-up
//     (worker processes, connections) is not measured.
//   - Add to the [Stats] counters as work happens: Sentences when a spout emits, Words
//     when a counter has counted, and in "ack" mode Acked, Failed and Timeouts when trees
//     complete, recording each acked tree's latency in Stats.Latency, and Replayed when a
//     failed or timed-out sentence is emitted again. Counters are shared
//     by all goroutines, so add in batches (per tuple or per batch), not per word.
//   - With Options.Rate > 0, pace each spout with a [Pacer] at [Options.SpoutRate] and
//     measure latency from the scheduled emit time the Pacer returns, so a backlog shows
//     as latency instead of being hidden (coordinated omission). With rate 0 latency is
//     measured from the actual emit time.
//   - Use [SpoutSeed] for spout i's generator, so that every runner sees the same
//     sentences.
//   - Honour Options.CountDelay by calling [BusyWork] once per counted word.
//   - With Options.Workers > 1, run the topology in that many worker processes, each
//     with its own Stats, and fold them into stats: every worker sends
//     [Stats.Snapshot] now and then, and the runner adds each snapshot's change since
//     that worker's previous one with [Stats.AddDelta]. Add the bytes and tuples sent
//     between workers to Stats.WireBytes and Stats.WireTuples, and record each
//     worker's RSS about once a second with [Stats.RecordWorkerRSS]. Wait for every
//     worker process before returning: Run's CPU measurement includes only child
//     processes that have been waited for.
package bench
