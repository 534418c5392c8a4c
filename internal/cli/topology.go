package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/workerproc"
)

// Topology is a topology the command line knows by name (galecli.Topology
// documents the contract).
type Topology struct {
	Name  string
	Short string
	Build func(params map[string]string) (*gale.Topology, gale.Config, error)
}

// register checks the topologies and makes each one known to worker
// processes of this binary, which rebuild it by name from the same
// parameters.
func (o *Options) register() error {
	seen := make(map[string]bool)
	reserved := make(map[string]string)
	for _, r := range o.Reserved {
		reserved[r.Name] = r.By
	}
	var errs []error
	for i, t := range o.Topologies {
		switch {
		case t.Name == "":
			errs = append(errs, fmt.Errorf("topology %d has no name", i))
		case strings.ContainsAny(t.Name, " \t\n=/"):
			errs = append(errs, fmt.Errorf("topology name %q: use no spaces, '=' or '/'", t.Name))
		case reserved[t.Name] != "":
			errs = append(errs, fmt.Errorf("topology name %q is taken by %q: choose another", t.Name, reserved[t.Name]))
		case seen[t.Name]:
			errs = append(errs, fmt.Errorf("topology %q is given twice", t.Name))
		case t.Build == nil:
			errs = append(errs, fmt.Errorf("topology %q has no Build function", t.Name))
		}
		seen[t.Name] = true
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	// The reserved ones too: the failover bench, for one, submits this
	// program, whose workers must rebuild its topology.
	topologies := slices.Clone(o.Topologies)
	for _, r := range o.Reserved {
		topologies = append(topologies, r.Topology)
	}
	for _, t := range topologies {
		workerproc.Replace(workerFactory(t.Name), func(raw json.RawMessage) (*workerproc.Built, error) {
			var params map[string]string
			if len(raw) > 0 {
				if err := json.Unmarshal(raw, &params); err != nil {
					return nil, fmt.Errorf("topology %q: parameters: %w", t.Name, err)
				}
			}
			topo, conf, err := t.Build(params)
			if err != nil {
				return nil, fmt.Errorf("topology %q: %w", t.Name, err)
			}
			return &workerproc.Built{Topology: topo, Config: conf}, nil
		})
	}
	return nil
}

// workerFactory is the name worker processes know topology name by;
// the prefix keeps it apart from the bench's own factory.
func workerFactory(name string) string { return "run:" + name }

// Lookup finds a topology by name.
func (o *Options) Lookup(name string) (Topology, bool) {
	for _, t := range o.Topologies {
		if t.Name == name {
			return t, true
		}
	}
	return Topology{}, false
}

// names lists the topologies' names, sorted.
func (o *Options) names() []string {
	m := make(map[string]bool)
	for _, t := range o.Topologies {
		m[t.Name] = true
	}
	return slices.Sorted(maps.Keys(m))
}

// Known says which topologies this program has, for an error message.
func (o *Options) Known() string {
	if len(o.Topologies) == 0 {
		return o.Name + " has no topologies"
	}
	return o.Name + " has " + strings.Join(o.names(), ", ")
}
