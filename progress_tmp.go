package gale

// ProgressReporter is implemented by a spout that knows its own progress:
// what can never be replayed again (committed offsets for Kafka). The
// max-spout-pending auto-tuner uses it instead of acks. Progress is
// cumulative and monotonic; the runtime calls it on the spout's goroutine.
//
// This declaration stands in for the coordinator's in api.go and goes
// when main has it.
type ProgressReporter interface{ Progress() int64 }
