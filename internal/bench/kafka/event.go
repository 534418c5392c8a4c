package kafka

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Event is the JSON document every record of the bench carries as its
// value: a small click-stream event whose ID is unique over a run.
type Event struct {
	ID     int64  `json:"id"`
	User   string `json:"user"`
	Action string `json:"action"`
	TS     int64  `json:"ts"`
}

// actions are the events' actions, picked by id.
var actions = [...]string{"view", "click", "scroll", "buy"}

// AppendEvent appends the JSON document of the event with id id to dst
// (about 80 bytes).
func AppendEvent(dst []byte, id int64) []byte {
	dst = append(dst, `{"id":`...)
	dst = strconv.AppendInt(dst, id, 10)
	dst = append(dst, `,"user":"user-`...)
	dst = strconv.AppendInt(dst, id%10007, 10)
	dst = append(dst, `","action":"`...)
	dst = append(dst, actions[id%int64(len(actions))]...)
	dst = append(dst, `","ts":`...)
	dst = strconv.AppendInt(dst, 1764600000000+id, 10)
	return append(dst, '}')
}

// DecodeID decodes an event's JSON document, the decoding step of every
// mode, and returns its id. It is the work the paper's experiments measure
// the framework against: encoding/json into Event.
func DecodeID(value []byte) (int64, error) {
	var e Event
	if err := json.Unmarshal(value, &e); err != nil {
		return 0, fmt.Errorf("benchkafka: decode event: %w", err)
	}
	return e.ID, nil
}
