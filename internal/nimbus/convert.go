package nimbus

import (
	"encoding/json"
	"net"
	"strconv"
	"time"

	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/metrics/components"
	"github.com/gale-stream/gale/internal/nimbuspb"
	"github.com/gale-stream/gale/internal/plan"
	"github.com/gale-stream/gale/internal/scheduler"
)

// PlanTopology is the plan's input of a submitted definition.
func PlanTopology(d *nimbuspb.TopologyDefinition) plan.Topology {
	var t plan.Topology
	for _, c := range d.GetComponents() {
		pc := plan.Component{
			ID:                 c.GetId(),
			Spout:              c.GetSpout(),
			Tasks:              int(c.GetTasks()),
			Parallelism:        int(c.GetParallelism()),
			MaxTaskParallelism: int(c.GetMaxTaskParallelism()),
			Streams:            append([]string(nil), c.GetStreams()...),
		}
		for _, in := range c.GetInputs() {
			pc.Inputs = append(pc.Inputs, plan.Input{Component: in.GetComponent(), Stream: in.GetStream(),
				Grouping: in.GetGrouping(), Fields: append([]string(nil), in.GetFields()...)})
		}
		t.Components = append(t.Components, pc)
	}
	return t
}

// Definition is the submitted form of a plan's input, with the worker
// process's factory name, its parameters and topology.workers: what a
// client puts in SubmitHeader.Definition.
func Definition(t plan.Topology, factory string, params map[string]string, workers int) *nimbuspb.TopologyDefinition {
	d := &nimbuspb.TopologyDefinition{Factory: factory, Params: params, Workers: int32(workers)}
	for _, c := range t.Components {
		pc := &nimbuspb.Component{
			Id:                 c.ID,
			Spout:              c.Spout,
			Tasks:              int32(c.Tasks),
			Parallelism:        int32(c.Parallelism),
			MaxTaskParallelism: int32(c.MaxTaskParallelism),
			Streams:            c.Streams,
		}
		for _, in := range c.Inputs {
			pc.Inputs = append(pc.Inputs, &nimbuspb.Input{Component: in.Component, Stream: in.Stream, Grouping: in.Grouping, Fields: in.Fields})
		}
		d.Components = append(d.Components, pc)
	}
	return d
}

func artifactPB(a coord.Artifact) *nimbuspb.Artifact {
	return &nimbuspb.Artifact{Sha256: a.SHA256, Size: a.Size, Goos: a.GOOS, Goarch: a.GOARCH,
		GaleVersion: a.GaleVersion, WireVersion: int32(a.WireVersion)}
}

func artifactRecord(a *nimbuspb.Artifact) coord.Artifact {
	return coord.Artifact{SHA256: a.GetSha256(), Size: a.GetSize(), GOOS: a.GetGoos(), GOARCH: a.GetGoarch(),
		GaleVersion: a.GetGaleVersion(), WireVersion: int(a.GetWireVersion())}
}

// effectiveDefinition is the definition a topology runs with now: its
// submitted one with the rebalance overrides applied.
func effectiveDefinition(t coord.Topology) (plan.Topology, error) {
	return t.Definition.WithParallelism(t.Parallelism)
}

func summary(t coord.Topology, pending string, now time.Time, counts counters) *nimbuspb.TopologySummary {
	s := &nimbuspb.TopologySummary{
		Id:             t.ID,
		Name:           t.Name,
		Status:         t.Status,
		PendingReason:  pending,
		Workers:        int32(t.Workers),
		UptimeSecs:     int64(now.Sub(t.SubmittedAt).Seconds()),
		Emitted:        counts.emitted,
		Acked:          counts.acked,
		Failed:         counts.failed,
		WorkersRunning: int32(counts.running),
	}
	s.CompleteLatency = components.Histogram(&counts.latency)
	if d, err := effectiveDefinition(t); err == nil {
		if p, err := plan.New(d); err == nil {
			s.Executors = int32(len(p.Executors))
			s.Tasks = int32(p.Tasks)
		}
	}
	return s
}

func topologyInfo(t coord.Topology, a *coord.Assignment, s *nimbuspb.TopologySummary, workers []*nimbuspb.WorkerReport) *nimbuspb.TopologyInfo {
	def, err := effectiveDefinition(t)
	if err != nil {
		def = t.Definition
	}
	conf, _ := json.Marshal(t.Config) // a record's config came from JSON
	info := &nimbuspb.TopologyInfo{
		Summary:    s,
		Definition: Definition(def, t.Factory, t.Params, t.Workers),
		ConfigJson: conf,
		Artifact:   artifactPB(t.Artifact),
		Workers:    workers,
	}
	if a != nil {
		ai := &nimbuspb.AssignmentInfo{Version: a.Version, Fingerprint: Fingerprint(*a)}
		for _, w := range a.Workers {
			ai.Workers = append(ai.Workers, &nimbuspb.WorkerSlot{Supervisor: w.Supervisor, Host: w.Host, Port: int32(w.Port)})
		}
		for _, e := range a.Executors {
			ai.Executors = append(ai.Executors, int32(e))
		}
		if len(a.Parallelism) > 0 {
			ai.Parallelism = make(map[string]int32, len(a.Parallelism))
			for k, v := range a.Parallelism {
				ai.Parallelism[k] = int32(v)
			}
		}
		info.Assignment = ai
	}
	return info
}

// Fingerprint is the assignment's fingerprint as its workers compute it
// for their hellos and report it: scheduler.Assignment.Fingerprint of
// the workers' host:port in order, with the worker indexes as slot ids,
// and where each executor runs.
func Fingerprint(a coord.Assignment) string {
	sa := scheduler.Assignment{Executors: a.Executors}
	for i, w := range a.Workers {
		sa.Slots = append(sa.Slots, scheduler.Slot{ID: strconv.Itoa(i), Addr: net.JoinHostPort(w.Host, strconv.Itoa(w.Port))})
	}
	return sa.Fingerprint()
}
