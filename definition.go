package gale

import (
	"encoding/json"
	"fmt"
)

// TopologyDef is the declarative, language-neutral description of a
// topology: its components, their streams, parallelism, groupings and
// config. It is what the builder produces, what nimbus stores and what YAML
// or other languages will produce; docs/topology.schema.json is its JSON
// Schema. It holds no code: a Topology pairs it with the Go factories that
// make component instances.
type TopologyDef struct {
	Spouts []ComponentDef `json:"spouts"`
	Bolts  []ComponentDef `json:"bolts"`
	// Types lists the user types registered for the wire
	// (TopologyBuilder.RegisterType), in order: every worker registers
	// them in this order, so they agree on each type's id.
	Types []TypeDef `json:"types,omitempty"`
}

// TypeDef is a registered user type: the name it was registered under and
// its Go type, as reflect prints it.
type TypeDef struct {
	Name   string `json:"name"`
	GoType string `json:"go_type"`
}

// ComponentDef describes one spout or bolt.
type ComponentDef struct {
	ID string `json:"id"`
	// Language says how instances are made: "go" for a Go factory
	// registered in the topology's binary.
	Language    string      `json:"language"`
	Parallelism int         `json:"parallelism"` // executors
	Tasks       int         `json:"tasks"`       // fixed for the topology's life
	Config      Config      `json:"config,omitempty"`
	Streams     []StreamDef `json:"streams"`
	Inputs      []InputDef  `json:"inputs,omitempty"`
}

// StreamDef is a declared output stream.
type StreamDef struct {
	ID     string   `json:"id"`
	Fields []string `json:"fields"`
	Direct bool     `json:"direct,omitempty"`
}

// InputDef subscribes a bolt to a stream of another component.
type InputDef struct {
	Component string      `json:"component"`
	Stream    string      `json:"stream"`
	Grouping  GroupingDef `json:"grouping"`
}

// Grouping types.
const (
	GroupingShuffle        = "shuffle"
	GroupingFields         = "fields"
	GroupingAll            = "all"
	GroupingGlobal         = "global"
	GroupingLocalOrShuffle = "local_or_shuffle"
	GroupingDirect         = "direct"
	GroupingNone           = "none"
	GroupingCustom         = "custom"
	GroupingPartialKey     = "partial_key"
)

// GroupingDef is the declarative form of a grouping.
type GroupingDef struct {
	Type   string   `json:"type"`
	Fields []string `json:"fields,omitempty"` // fields and partial key groupings
	Custom string   `json:"custom,omitempty"` // name of a custom grouping
}

func (g GroupingDef) String() string {
	switch g.Type {
	case GroupingFields, GroupingPartialKey:
		return fmt.Sprintf("%s%v", g.Type, g.Fields)
	case GroupingCustom:
		return "custom(" + g.Custom + ")"
	}
	return g.Type
}

// stormName is the grouping's type by Storm's name, as the nimbus API
// and the Storm UI's REST API give it: local-or-shuffle for
// local_or_shuffle, partial-key for partial_key, the others as they are.
func (g GroupingDef) stormName() string {
	switch g.Type {
	case GroupingLocalOrShuffle:
		return "local-or-shuffle"
	case GroupingPartialKey:
		return "partial-key"
	}
	return g.Type
}

// Stream returns the declared stream with the given id.
func (c *ComponentDef) Stream(id string) (StreamDef, bool) {
	for _, s := range c.Streams {
		if s.ID == id {
			return s, true
		}
	}
	return StreamDef{}, false
}

// Component returns the spout or bolt with the given id.
func (d *TopologyDef) Component(id string) (*ComponentDef, bool) {
	for i := range d.Spouts {
		if d.Spouts[i].ID == id {
			return &d.Spouts[i], true
		}
	}
	for i := range d.Bolts {
		if d.Bolts[i].ID == id {
			return &d.Bolts[i], true
		}
	}
	return nil, false
}

// MarshalIndent returns the definition as indented JSON.
func (d *TopologyDef) MarshalIndent() ([]byte, error) {
	return json.MarshalIndent(d, "", "  ")
}
