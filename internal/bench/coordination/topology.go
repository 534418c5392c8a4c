package coordination

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// definition is a word count (sentences → split → count, acked) with
// enough executors for workers workers: as many component executors as
// workers, and an acker per worker (Storm's default).
func definition(workers int) *nimbuspb.TopologyDefinition {
	spouts := max(1, (workers+4)/5)
	bolts := max(1, (workers-spouts+1)/2)
	count := max(1, workers-spouts-bolts)
	comp := func(id string, spout bool, n int, from string) *nimbuspb.Component {
		c := &nimbuspb.Component{Id: id, Spout: spout, Tasks: int32(n), Parallelism: int32(n), Streams: []string{"default"}}
		if from != "" {
			c.Inputs = []*nimbuspb.Input{{Component: from, Stream: "default"}}
		}
		return c
	}
	return &nimbuspb.TopologyDefinition{
		Factory: "wordcount",
		Components: []*nimbuspb.Component{
			comp("sentences", true, spouts, ""),
			comp("split", false, bolts, "sentences"),
			comp("count", false, count, "split"),
		},
		Workers: int32(workers),
	}
}

// header is the submission of topology name with workers workers. Its
// artifact is a few bytes that name it, described as a binary for this
// machine: the simulated supervisors never run it.
func header(name string, workers int, galeVersion string, wireVersion int) (*nimbuspb.SubmitHeader, []byte, error) {
	blob := []byte("gale bench coordination: the stand-in artifact of " + name + "; nothing runs it\n")
	sum := sha256.Sum256(blob)
	conf, err := json.Marshal(map[string]any{gale.TopologyWorkers: workers})
	if err != nil {
		return nil, nil, err
	}
	return &nimbuspb.SubmitHeader{
		Name:       name,
		Definition: definition(workers),
		ConfigJson: conf,
		Artifact: &nimbuspb.Artifact{
			Sha256: hex.EncodeToString(sum[:]), Size: int64(len(blob)),
			Goos: goos, Goarch: goarch,
			GaleVersion: galeVersion, WireVersion: int32(wireVersion),
		},
	}, blob, nil
}

// submit submits topology name and returns its id once nimbus answered.
// A topology left pending is an error naming nimbus's reason.
func submit(ctx context.Context, c nimbuspb.NimbusClient, name string, workers int, galeVersion string, wireVersion int) (string, error) {
	h, blob, err := header(name, workers, galeVersion, wireVersion)
	if err != nil {
		return "", err
	}
	stream, err := c.Submit(ctx)
	if err != nil {
		return "", fmt.Errorf("submit %s: %w", name, err)
	}
	if err := stream.Send(&nimbuspb.SubmitRequest{Part: &nimbuspb.SubmitRequest_Header{Header: h}}); err != nil {
		return "", fmt.Errorf("submit %s: send the header: %w", name, err)
	}
	if err := stream.Send(&nimbuspb.SubmitRequest{Part: &nimbuspb.SubmitRequest_Chunk{Chunk: blob}}); err != nil {
		return "", fmt.Errorf("submit %s: send the artifact: %w", name, err)
	}
	resp, err := stream.CloseAndRecv()
	if err != nil {
		return "", fmt.Errorf("submit %s: %w", name, err)
	}
	if resp.GetPendingReason() != "" {
		return "", fmt.Errorf("submit %s: nimbus left it %s: %s", name, resp.GetStatus(), resp.GetPendingReason())
	}
	return resp.GetId(), nil
}
