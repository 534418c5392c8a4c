package kafka

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// What a partition's next owner may skip.
//
// A commit moves a partition's offset to its first open record (in
// flight, or waiting for a retry or for the dead-letter sink), so every
// record finished behind an open one would be read again by the next
// owner after a rebalance or a crash: after a worker with bolts died, the
// trees through it hold the commit point for a message timeout while the
// rest finish behind them, and a rebalance then (the worker's restart
// rejoins the group) replayed all of them. So each commit also records,
// in the offset's metadata, which offsets from the committed one on
// were still open, up to the newest the spout had emitted; the next owner
// reads it with the committed offsets (kgo.OnOffsetsFetched) and skips
// the records of that range that were not open: they finished.
//
// What is read again is then bounded by the records open at the last
// commit (in flight: at most max.spout.pending per task, or waiting for a
// retry) plus those emitted after it (offset.commit.period's worth), and,
// when the open offsets do not fit in resumeMaxBytes, the rest of the
// range past the ones that fit. Another client reading the group ignores
// the metadata and reads every record from the committed offset, as
// before.

// resumePrefix starts the metadata the spout writes; anything else (no
// metadata, another client's) is ignored.
const resumePrefix = "gale1:"

// resumeMaxBytes bounds the encoded open offsets, under Kafka's default
// offset.metadata.max.bytes (4096) once in base64 with the prefix and
// the partition's name.
const resumeMaxBytes = 2400

// resumeRange is what a committed offset's metadata says of the records
// from it on: in [from, to), the offsets in open (increasing) were not
// finished; every other record was. Records at or past to are read as
// usual.
type resumeRange struct {
	from, to int64
	open     []int64
}

// skip reports whether the record at off finished before the commit and
// need not be read again.
func (r *resumeRange) skip(off int64) bool {
	if r == nil || off < r.from || off >= r.to {
		return false
	}
	i := sort.Search(len(r.open), func(i int) bool { return r.open[i] >= off })
	return i == len(r.open) || r.open[i] != off
}

// resumeMetadata encodes the open offsets of t from its commit point on,
// for the commit of tp at that point: "gale1:topic/partition:" and the
// base64 of the range's end and its open offsets, as varint deltas. When
// they do not fit in resumeMaxBytes, the range ends at the first open
// offset left out. It returns "" when there is nothing to skip.
func resumeMetadata(tp topicPartition, t *offsetTracker) string {
	from, ok := t.commitPoint()
	if !ok || t.next <= from || t.open == 0 {
		return "" // everything tracked finished: the commit point is past it
	}
	var open []byte
	prev, to, n := from, t.next, 0
	for i := t.head; i < len(t.offs); i++ {
		if t.done[i] {
			continue
		}
		if len(open)+binary.MaxVarintLen64 > resumeMaxBytes {
			to = t.offs[i]
			break
		}
		open = binary.AppendUvarint(open, uint64(t.offs[i]-prev))
		prev = t.offs[i]
		n++
	}
	b := binary.AppendUvarint(nil, uint64(to-from))
	b = binary.AppendUvarint(b, uint64(n))
	b = append(b, open...)
	return resumePrefix + tp.topic + "/" + strconv.Itoa(int(tp.partition)) + ":" + base64.RawStdEncoding.EncodeToString(b)
}

var errResume = errors.New("not the spout's resume metadata")

// parseResume decodes metadata written by resumeMetadata for a commit at
// from, returning the partition it names and the range.
func parseResume(meta string, from int64) (topicPartition, *resumeRange, error) {
	rest, ok := strings.CutPrefix(meta, resumePrefix)
	if !ok {
		return topicPartition{}, nil, errResume
	}
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return topicPartition{}, nil, errResume
	}
	name, enc := rest[:i], rest[i+1:]
	j := strings.LastIndexByte(name, '/')
	if j < 0 {
		return topicPartition{}, nil, errResume
	}
	p, err := strconv.ParseInt(name[j+1:], 10, 32)
	if err != nil {
		return topicPartition{}, nil, errResume
	}
	tp := topicPartition{name[:j], int32(p)}
	b, err := base64.RawStdEncoding.DecodeString(enc)
	if err != nil {
		return tp, nil, errResume
	}
	span, k := binary.Uvarint(b)
	if k <= 0 {
		return tp, nil, errResume
	}
	b = b[k:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return tp, nil, errResume
	}
	b = b[k:]
	r := &resumeRange{from: from, to: from + int64(span), open: make([]int64, 0, n)}
	prev := from
	for range n {
		d, k := binary.Uvarint(b)
		if k <= 0 {
			return tp, nil, errResume
		}
		b = b[k:]
		prev += int64(d)
		if prev >= r.to || len(r.open) > 0 && prev <= r.open[len(r.open)-1] {
			return tp, nil, errResume
		}
		r.open = append(r.open, prev)
	}
	if len(b) != 0 || span == 0 {
		return tp, nil, errResume
	}
	return tp, r, nil
}

// resumeRanges reads the ranges of a group's fetched commits.
func resumeRanges(resp *kmsg.OffsetFetchResponse) map[topicPartition]*resumeRange {
	out := make(map[topicPartition]*resumeRange)
	add := func(part int32, off int64, meta *string) {
		if meta == nil || off < 0 {
			return
		}
		if tp, r, err := parseResume(*meta, off); err == nil && tp.partition == part {
			out[tp] = r
		}
	}
	for _, g := range resp.Groups {
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				add(p.Partition, p.Offset, p.Metadata)
			}
		}
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			add(p.Partition, p.Offset, p.Metadata)
		}
	}
	return out
}
