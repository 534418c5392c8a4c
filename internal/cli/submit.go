package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/spf13/cobra"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/bridge"
	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/nimbuspb"
	"github.com/gale-stream/gale/internal/plan"
	"github.com/gale-stream/gale/internal/transport"
)

// SubmitFlags are the flags of `submit`.
type SubmitFlags struct {
	ClusterFlags
	Params  []string
	Conf    []string
	Workers int
	example string
	asJSON  bool
}

// artifactChunk is the size of the artifact's pieces in a submission.
const artifactChunk = 64 << 10

// newSubmitCmd is `submit NAME`, Storm's `storm jar`: one of this
// program's topologies, with this program as its artifact.
func newSubmitCmd(opts *Options) *cobra.Command {
	var f SubmitFlags
	cmd := &cobra.Command{
		Use:   "submit NAME",
		Short: "Submit one of this program's topologies to the cluster, with this program as the workers' binary",
		Long: `Submit the topology NAME, one of this program's, to the cluster's nimbus
(found through nimbus.seeds, or --nimbus). The program uploads itself: the
cluster's workers run this same binary, so it must be built for the
supervisors' OS and architecture. --example NAME is the same as NAME (the
stock gale binary's topologies are its examples).

Each -p KEY=VALUE goes to the topology's Build function here and in every
worker. Each -c KEY=VALUE sets a topology.* key of the topology's config
(Storm's flag); the value is read as YAML: 3 is a number, true a boolean,
anything else a string. --workers N sets topology.workers. Every key is
checked before anything is sent.

` + topologyList(opts),
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := f.Parse(cmd, opts, args)
			if err != nil {
				return err
			}
			return s.Send(cmd, f)
		},
	}
	f.Bind(cmd)
	fl := cmd.Flags()
	fl.StringArrayVarP(&f.Params, "param", "p", nil, "a parameter for the topology's Build function, `KEY=VALUE` (repeatable)")
	fl.StringArrayVarP(&f.Conf, "config", "c", nil, "a topology config setting, `KEY=VALUE`, the value read as YAML (repeatable)")
	fl.IntVar(&f.Workers, "workers", 0, "worker processes (topology.workers; default: the topology's config)")
	fl.StringVar(&f.example, "example", "", "the `NAME` of one of this binary's topologies (the same as giving NAME)")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON document")
	return cmd
}

// submission is a checked submission, ready to send.
type Submission struct {
	Name    string
	header  *nimbuspb.SubmitHeader
	exe     string
	Cluster ClientConfig
}

// parse checks the command line, builds the topology and plans it:
// everything that can be wrong is found before nimbus is called.
func (f *SubmitFlags) Parse(cmd *cobra.Command, opts *Options, args []string) (*Submission, error) {
	var errs []error
	name := f.example
	switch {
	case len(args) > 1:
		errs = append(errs, fmt.Errorf("%q takes one topology name, got %q", cmd.CommandPath(), args))
	case len(args) == 1 && name != "" && args[0] != name:
		errs = append(errs, fmt.Errorf("%q got two topologies, %q and --example %q: give one", cmd.CommandPath(), args[0], name))
	case len(args) == 1:
		name = args[0]
	}
	var t Topology
	if name == "" && len(args) <= 1 {
		errs = append(errs, fmt.Errorf("%q needs the name of a topology: %s", cmd.CommandPath(), opts.Known()))
	} else if name != "" {
		var ok bool
		if t, ok = opts.Lookup(name); !ok {
			errs = append(errs, fmt.Errorf("unknown topology %q: %s", name, opts.Known()))
		}
	}
	params, err := parseParams("--param", f.Params)
	errs = append(errs, err)
	settings, err := parseSettings(f.Conf)
	errs = append(errs, err)
	if cmd.Flags().Changed("workers") {
		if f.Workers < 1 {
			errs = append(errs, fmt.Errorf("--workers must be ≥ 1, got %d", f.Workers))
		} else {
			settings[gale.TopologyWorkers] = f.Workers
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, usageError{err}
	}
	file, err := f.FileConfig()
	if err != nil {
		return nil, err
	}
	eff, err := config.Resolve(file, nil)
	if err != nil {
		return nil, err
	}
	cluster, err := f.ClientConfigFrom(eff)
	if err != nil {
		return nil, err
	}

	topo, conf, err := t.Build(params)
	if err != nil {
		return nil, fmt.Errorf("topology %q: %w", t.Name, err)
	}
	layer := maps.Clone(conf)
	if layer == nil {
		layer = gale.Config{}
	}
	maps.Copy(layer, settings)
	if eff, err = config.Resolve(file, layer); err != nil {
		return nil, fmt.Errorf("topology %q: %w", t.Name, err)
	}
	workers, _ := eff.Int(gale.TopologyWorkers)
	pt, err := bridge.PlanTopology(topo, layer, file, workers)
	if err != nil {
		return nil, fmt.Errorf("topology %q: %w", t.Name, err)
	}
	confJSON, err := json.Marshal(layer)
	if err != nil {
		return nil, fmt.Errorf("topology %q: config: %w", t.Name, err)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this program's binary to upload: %w", err)
	}
	art, err := artifactOf(exe)
	if err != nil {
		return nil, err
	}
	return &Submission{
		Name: t.Name,
		header: &nimbuspb.SubmitHeader{
			Name:       t.Name,
			Definition: definitionOf(pt, t.Name, params, workers),
			ConfigJson: confJSON,
			Artifact:   art,
		},
		exe:     exe,
		Cluster: cluster,
	}, nil
}

// parseParams reads KEY=VALUE pairs of flag.
func parseParams(flag string, kvs []string) (map[string]string, error) {
	var errs []error
	params := make(map[string]string)
	for _, p := range kvs {
		k, v, ok := strings.Cut(p, "=")
		switch {
		case !ok || k == "":
			errs = append(errs, fmt.Errorf("%s wants KEY=VALUE, got %q", flag, p))
		case hasKey(params, k):
			errs = append(errs, fmt.Errorf("%s %s is given twice", flag, k))
		default:
			params[k] = v
		}
	}
	return params, errors.Join(errs...)
}

// parseSettings reads -c KEY=VALUE settings, each value a YAML scalar, and
// checks them as a topology config layer: topology.* keys and user keys
// (any key outside Gale's and Storm's namespaces, such as starter.top.n).
func parseSettings(kvs []string) (gale.Config, error) {
	var errs []error
	c := gale.Config{}
	for _, s := range kvs {
		k, v, ok := strings.Cut(s, "=")
		switch {
		case !ok || k == "":
			errs = append(errs, fmt.Errorf("-c wants KEY=VALUE, got %q", s))
			continue
		case c[k] != nil:
			errs = append(errs, fmt.Errorf("-c %s is given twice", k))
			continue
		}
		var val any
		if err := yaml.Unmarshal([]byte(v), &val); err != nil || val == nil {
			// Not YAML, or empty: the text itself, for the key's type
			// check to judge.
			val = v
		}
		if _, err := config.Resolve(nil, gale.Config{k: val}); errors.Is(err, gale.ErrForbiddenOverride) && !strings.HasPrefix(k, "topology.") {
			errs = append(errs, fmt.Errorf("-c %s: -c sets topology.* keys and user keys only; set cluster keys in gale.yaml (--file)", k))
			continue
		}
		c[k] = val
	}
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	if _, err := config.Resolve(nil, c); err != nil {
		return c, fmt.Errorf("-c: %w", err)
	}
	return c, nil
}

// definitionOf is the definition nimbus schedules from.
func definitionOf(pt plan.Topology, factory string, params map[string]string, workers int) *nimbuspb.TopologyDefinition {
	d := &nimbuspb.TopologyDefinition{
		Factory: factory,
		Params:  params,
		Workers: int32(workers),
	}
	for _, c := range pt.Components {
		pc := &nimbuspb.Component{
			Id:                 c.ID,
			Spout:              c.Spout,
			Tasks:              int32(c.Tasks),
			Parallelism:        int32(c.Parallelism),
			MaxTaskParallelism: int32(c.MaxTaskParallelism),
			Streams:            slices.Clone(c.Streams),
		}
		for _, in := range c.Inputs {
			pc.Inputs = append(pc.Inputs, &nimbuspb.Input{Component: in.Component, Stream: in.Stream,
				Grouping: in.Grouping, Fields: slices.Clone(in.Fields)})
		}
		d.Components = append(d.Components, pc)
	}
	return d
}

// artifactOf describes the binary at path: its checksum and size, and
// what it runs on.
func artifactOf(path string) (*nimbuspb.Artifact, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read this program's binary: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return nil, fmt.Errorf("read this program's binary: %w", err)
	}
	return &nimbuspb.Artifact{
		Sha256:      hex.EncodeToString(h.Sum(nil)),
		Size:        n,
		Goos:        runtime.GOOS,
		Goarch:      runtime.GOARCH,
		GaleVersion: CurrentVersion().Version,
		WireVersion: int32(transport.ProtocolVersion),
	}, nil
}

// submitResult is what submit prints; --json prints it as is.
type submitResult struct {
	Name          string `json:"name"`
	ID            string `json:"id"`
	Status        string `json:"status"`
	PendingReason string `json:"pending_reason,omitempty"`
	Nimbus        string `json:"nimbus"`
}

// Send submits s and prints what nimbus answered, as `submit` does
// (--json as f says).
func (s *Submission) Send(cmd *cobra.Command, f SubmitFlags) error {
	r, err := s.Submit(cmd.Context(), cmd)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if f.asJSON {
		return WriteJSON(out, r)
	}
	line := fmt.Sprintf("submitted %s to nimbus %s: id %s, %s", r.Name, r.Nimbus, r.ID, r.Status)
	if r.PendingReason != "" {
		line += " (pending: " + r.PendingReason + ")"
	}
	_, err = fmt.Fprintln(out, line)
	return err
}

// submit uploads the submission to the nimbus leader and returns its
// answer.
func (s *Submission) Submit(ctx context.Context, cmd *cobra.Command) (submitResult, error) {
	c, err := DialNimbus(ctx, s.Cluster)
	if err != nil {
		return submitResult{}, err
	}
	defer c.Close()
	var resp *nimbuspb.SubmitResponse
	err = c.Call(ctx, func(n nimbuspb.NimbusClient) error {
		resp, err = s.upload(cmd, n)
		return err
	})
	if err != nil {
		return submitResult{}, fmt.Errorf("submit %s: %w", s.Name, err)
	}
	return submitResult{Name: s.Name, ID: resp.GetId(), Status: resp.GetStatus(), PendingReason: resp.GetPendingReason(), Nimbus: c.leader}, nil
}

// upload sends the header, then the artifact in chunks.
func (s *Submission) upload(cmd *cobra.Command, n nimbuspb.NimbusClient) (*nimbuspb.SubmitResponse, error) {
	f, err := os.Open(s.exe)
	if err != nil {
		return nil, fmt.Errorf("read this program's binary: %w", err)
	}
	defer f.Close()
	stream, err := n.Submit(cmd.Context())
	if err != nil {
		return nil, err
	}
	if err := stream.Send(&nimbuspb.SubmitRequest{Part: &nimbuspb.SubmitRequest_Header{Header: s.header}}); err != nil {
		return stream.CloseAndRecv() // the server's reason, if it gave one
	}
	for {
		// A fresh buffer each time: gRPC may hold a sent message.
		buf := make([]byte, artifactChunk)
		k, rerr := io.ReadFull(f, buf)
		if k > 0 {
			if err := stream.Send(&nimbuspb.SubmitRequest{Part: &nimbuspb.SubmitRequest_Chunk{Chunk: buf[:k]}}); err != nil {
				return stream.CloseAndRecv()
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			stream.CloseSend()
			return nil, fmt.Errorf("read this program's binary: %w", rerr)
		}
	}
	return stream.CloseAndRecv()
}

// WriteJSON prints v as one indented JSON document.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
