package benchkafka

import (
	"errors"

	"github.com/gale-stream/gale"
)

// BenchTopology builds the topology of mode noack or ack.
func BenchTopology(mode string, brokers []string, topic, group string, tally *Tally) (*gale.Topology, gale.Config, error) {
	return nil, nil, errors.New("benchkafka: the topology modes need connectors/kafka")
}
