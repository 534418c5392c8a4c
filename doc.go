// Package gale is the API for writing Gale topologies: spouts, bolts, the
// builder that wires them with stream groupings, and the configuration keys.
//
// Gale follows Apache Storm's model. A topology is a graph of spouts (tuple
// sources) and bolts (tuple processors) joined by streams. Each component
// runs as a number of tasks; tasks run on executors (goroutines). Tuples a
// spout emits with a message id are tracked by the XOR acker: the spout's
// Ack is called once every tuple of the tree has been acked, its Fail when a
// bolt fails one or the tree times out (topology.message.timeout.secs).
//
// A minimal bolt:
//
//	type Split struct{ gale.BaseBolt }
//
//	func (*Split) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("word") }
//
//	func (s *Split) Execute(t *gale.Tuple) {
//		for _, w := range strings.Fields(t.GetString(0)) {
//			s.Collector.Emit(t, w)
//		}
//		s.Collector.Ack(t)
//	}
//
// Concurrency: a component instance (one task) is only ever called from one
// goroutine, so its methods need no locking. Collectors belong to their task
// and must not be used from other goroutines.
//
// Run a topology in this process with RunLocal; test it with package galetest.
package gale
