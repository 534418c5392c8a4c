package kafka_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/connectors/kafka"
	"github.com/gale-stream/gale/retry"
)

// timedSink stores letters in a retry.FileSink (each batch synced) and
// notes when each was stored.
type timedSink struct {
	file   *retry.FileSink
	stored func(source string, at time.Time)
}

func (s *timedSink) Send(ctx context.Context, l retry.DeadLetter) error {
	return s.SendBatch(ctx, []retry.DeadLetter{l})
}

func (s *timedSink) SendBatch(ctx context.Context, ls []retry.DeadLetter) error {
	if err := s.file.SendBatch(ctx, ls); err != nil {
		return err
	}
	now := time.Now()
	for _, l := range ls {
		s.stored(l.Source, now)
	}
	return nil
}

func (s *timedSink) Close() error { return s.file.Close() }

// TestMeasureFairShareWindows measures issue 22's fair-share figure at
// the defaults: in a failure storm on one partition (every 5th record
// fails twice, transiently, and is retried with the default backoff;
// the bolt, two tasks, spends 250 µs on each record;
// every 50th fails permanently and waits for its dead letter, stored in
// a synced file), the 100 ms windows in which a retry or a dead letter
// was pending, and how many of them saw no new record. A measurement on
// the wall clock, so it runs only when asked:
//
//	GALE_MEASURE_FAIRSHARE=30000 go test -run TestMeasureFairShareWindows -v ./connectors/kafka/
func TestMeasureFairShareWindows(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("GALE_MEASURE_FAIRSHARE"))
	if n <= 0 {
		t.Skip("a measurement on the wall clock: set GALE_MEASURE_FAIRSHARE to the records to read (e.g. 30000)")
	}
	const topic, work = "fairshare", 250 * time.Microsecond
	c := newCluster(t, 1, topic)
	produce(t, c, topic, 1, 0, n)

	type span struct{ from, to time.Time }
	var (
		mu       sync.Mutex
		start    time.Time
		news     []time.Time              // when each first attempt was executed
		open     = map[string]time.Time{} // value → when its wait began
		pendings []span
	)
	cfg := spoutConfig(c, topic, "g")
	cfg.OffsetCommitPeriod = 0 // the defaults, but for the test's connection settings
	dir := t.TempDir()
	cfg.DeadLetters = func(tc *gale.TopologyContext) (retry.DeadLetterSink, error) {
		f, err := retry.OpenFile(filepath.Join(dir, strconv.Itoa(tc.TaskID())+".jsonl"))
		if err != nil {
			return nil, err
		}
		return &timedSink{file: f, stored: func(source string, at time.Time) {
			mu.Lock()
			defer mu.Unlock()
			if from, ok := open["dl:"+source]; ok {
				pendings = append(pendings, span{from, at})
				delete(open, "dl:"+source)
			}
		}}, nil
	}
	sp := mustSpouts(t, cfg)
	s := newSeen()
	s.decide = func(v string, attempt int) error {
		time.Sleep(work) // the bolt's work on each record, so that reading takes seconds
		i, _ := strconv.Atoi(v)
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if start.IsZero() {
			start = now
		}
		if from, ok := open[v]; ok {
			pendings = append(pendings, span{from, now})
			delete(open, v)
		}
		if attempt == 1 {
			news = append(news, now)
		}
		switch {
		case i%50 == 49:
			open["dl:kafka:"+topic+"/0@"+v] = now
			return gale.Permanent(errBadRecord)
		case i%5 == 4 && attempt <= 2:
			open[v] = now
			return errBadRecord
		}
		return nil
	}
	lt := startTopology(t, "fairshare", sp, 1, s, gale.Config{gale.TopologyShutdownDrainTimeoutSecs: 0})
	defer lt.Stop()
	until(func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(news) == n && len(open) == 0
	})
	lt.Stop()

	mu.Lock()
	defer mu.Unlock()
	const window = 100 * time.Millisecond
	last := news[len(news)-1] // new records were waiting until the last was taken
	slots := int(last.Sub(start)/window) + 1
	pending := make([]bool, slots)
	for _, p := range pendings {
		for w := max(int(p.from.Sub(start)/window), 0); w < slots && !start.Add(time.Duration(w)*window).After(p.to); w++ {
			pending[w] = true
		}
	}
	fresh := make([]int, slots)
	for _, at := range news {
		fresh[min(int(at.Sub(start)/window), slots-1)]++
	}
	withPending, without := 0, 0
	for w := range slots {
		if pending[w] {
			withPending++
			if fresh[w] == 0 {
				without++
			}
		}
	}
	st := sp.Stats()
	t.Logf("%d records in %.1f s (%d windows of %v); %d retries, %d dead letters; %d windows with a retry or dead letter pending, %d of them without a new record; pauses %d",
		n, last.Sub(start).Seconds(), slots, window, st.Retried, st.DeadLettered, withPending, without, st.Pauses)
	if without > 0 {
		t.Errorf("%d of %d windows with retries pending saw no new record", without, withPending)
	}
	_ = kafka.FieldValue
}
