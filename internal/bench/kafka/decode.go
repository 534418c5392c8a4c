package kafka

import (
	"fmt"
	"strconv"
	"time"

	"github.com/gale-stream/gale"
)

// Decode is the topology's decoding step: it decodes each input's record
// value (the field named by Field, []byte or string) with DecodeID, counts the id in Tally
// when one is set, and, when Forward is set, emits the id and the value
// anchored on the input, for a sink downstream. It acks the input, or
// fails it as permanent when the value is not an event (retrying cannot
// help).
type Decode struct {
	gale.BaseBolt
	Field   string
	Tally   *Tally
	Forward bool
	// Latency is slept per input before it is acked: a remote service's
	// call (the auto-tuner's bench).
	Latency time.Duration
	idx     int
}

// DeclareOutputFields declares (key, value) when the bolt forwards: the
// id as the record key, as the Kafka sink takes them.
func (d *Decode) DeclareOutputFields(o gale.OutputDeclarer) {
	if d.Forward {
		o.Declare("key", "value")
	}
}

// Execute decodes t's value.
func (d *Decode) Execute(t *gale.Tuple) {
	if d.idx == 0 {
		if d.idx = t.FieldIndex(d.Field) + 1; d.idx == 0 {
			d.Collector.Fail(t, gale.Permanent(fmt.Errorf("benchkafka: the input from %s has no field %q (it has %v)", t.SourceComponent(), d.Field, t.Fields())))
			return
		}
	}
	var v []byte
	switch x := t.Value(d.idx - 1).(type) {
	case []byte:
		v = x
	case string:
		v = []byte(x)
	default:
		d.Collector.Fail(t, gale.Permanent(fmt.Errorf("benchkafka: field %q is %T, want []byte or string", d.Field, x)))
		return
	}
	id, err := DecodeID(v)
	if err != nil {
		d.Collector.Fail(t, gale.Permanent(err))
		return
	}
	if d.Tally != nil {
		d.Tally.See(id)
	}
	if d.Forward {
		if _, err := d.Collector.Emit(t, strconv.AppendInt(nil, id, 10), v); err != nil {
			d.Collector.Fail(t, err)
			return
		}
	}
	if d.Latency > 0 {
		time.Sleep(d.Latency)
	}
	d.Collector.Ack(t)
}
