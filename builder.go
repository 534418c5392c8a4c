package gale

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/gale-stream/gale/internal/codec"
	"github.com/gale-stream/gale/internal/config"
)

// ErrInvalidTopology is wrapped by every topology validation error.
var ErrInvalidTopology = errors.New("gale: invalid topology")

// Topology is a built, validated topology: its declarative definition and
// the Go factories that make component instances.
type Topology struct {
	Def     TopologyDef
	spouts  map[string]func() Spout
	bolts   map[string]func() Bolt
	customs map[string]func() CustomGrouping
	types   *codec.Registry
}

// TopologyBuilder wires spouts and bolts into a Topology, as Storm's
// TopologyBuilder does. It is not safe for concurrent use.
type TopologyBuilder struct {
	def     TopologyDef
	spouts  map[string]func() Spout
	bolts   map[string]func() Bolt
	customs map[string]func() CustomGrouping
	types   codec.Registry
	errs    []error
}

// NewTopologyBuilder returns an empty builder.
func NewTopologyBuilder() *TopologyBuilder {
	return &TopologyBuilder{
		spouts:  make(map[string]func() Spout),
		bolts:   make(map[string]func() Bolt),
		customs: make(map[string]func() CustomGrouping),
	}
}

func (b *TopologyBuilder) errorf(format string, args ...any) {
	b.errs = append(b.errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidTopology}, args...)...))
}

// declarer collects a component's DeclareOutputFields calls.
type declarer struct {
	comp    string
	streams []StreamDef
	errs    []error
}

func (d *declarer) add(stream string, direct bool, fields []string) {
	if stream == "" {
		d.errs = append(d.errs, fmt.Errorf("%w: component %q declares a stream with an empty id", ErrInvalidTopology, d.comp))
		return
	}
	for _, s := range d.streams {
		if s.ID == stream {
			d.errs = append(d.errs, fmt.Errorf("%w: component %q declares stream %q twice", ErrInvalidTopology, d.comp, stream))
			return
		}
	}
	d.streams = append(d.streams, StreamDef{ID: stream, Fields: slices.Clone(fields), Direct: direct})
}

func (d *declarer) Declare(fields ...string)                      { d.add(DefaultStream, false, fields) }
func (d *declarer) DeclareStream(stream string, fields ...string) { d.add(stream, false, fields) }
func (d *declarer) DeclareDirectStream(stream string, fields ...string) {
	d.add(stream, true, fields)
}

func (b *TopologyBuilder) declare(id string, decl func(OutputDeclarer)) []StreamDef {
	d := &declarer{comp: id}
	func() {
		defer func() {
			if r := recover(); r != nil {
				d.errs = append(d.errs, fmt.Errorf("%w: component %q: DeclareOutputFields panicked: %v", ErrInvalidTopology, id, r))
			}
		}()
		decl(d)
	}()
	b.errs = append(b.errs, d.errs...)
	return d.streams
}

func (b *TopologyBuilder) addComponent(id string, parallelism int) bool {
	if _, dup := b.def.Component(id); dup {
		b.errorf("component id %q is used twice; ids must be unique across spouts and bolts", id)
		return false
	}
	return true
}

// ComponentConfigurer is implemented by a spout or bolt that declares its
// own configuration, as Storm's getComponentConfiguration: storm-starter's
// RollingCountBolt sets its own topology.tick.tuple.freq.secs this way.
// SetSpout, SetBolt and SetBasicBolt call ComponentConfiguration once, on
// the instance they make to read DeclareOutputFields, and keep the result
// as the component's config layer. AddConfiguration (and
// SetMaxSpoutPending) on the declarer they return override it key by key.
// It may set the keys that may be set per component (TopologyDebug,
// TopologyMaxSpoutPending and its auto-tuner's keys,
// TopologyMaxTaskParallelism, TopologyTickTupleFreqSecs,
// TopologyComponentPanicPolicy, TopologyTupleReuse) and user keys (see
// Config); any other key is an error of Build naming the component and
// the key.
type ComponentConfigurer interface {
	ComponentConfiguration() Config
}

// componentConfig returns a copy of the config instance declares, if it
// is a ComponentConfigurer, or nil. A config that does not validate as a
// component's is reported, naming the component, and not kept, so that
// Build does not report it twice.
func (b *TopologyBuilder) componentConfig(kind, id string, instance any) (conf Config) {
	cc, ok := instance.(ComponentConfigurer)
	if !ok {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			b.errorf("%s %q: ComponentConfiguration panicked: %v", kind, id, r)
			conf = nil
		}
	}()
	declared := cc.ComponentConfiguration()
	if len(declared) == 0 {
		return nil
	}
	if err := config.ValidateComponent(id, declared); err != nil {
		b.errorf("%s %q: its ComponentConfiguration: %w", kind, id, err)
		return nil
	}
	conf = make(Config, len(declared))
	for k, v := range declared {
		conf[k] = v
	}
	return conf
}

// SetSpout adds a spout with parallelism executors (Storm's parallelism
// hint); factory is called once per task to make its instance, and once at
// build time to read DeclareOutputFields.
func (b *TopologyBuilder) SetSpout(id string, factory func() Spout, parallelism int) *SpoutDeclarer {
	d := &SpoutDeclarer{b: b, id: id}
	if factory == nil {
		b.errorf("spout %q has a nil factory", id)
		return d
	}
	if !b.addComponent(id, parallelism) {
		return d
	}
	var streams []StreamDef
	var conf Config
	if s := factory(); s == nil {
		b.errorf("spout %q: factory returned nil", id)
	} else {
		streams = b.declare(id, s.DeclareOutputFields)
		conf = b.componentConfig("spout", id, s)
	}
	b.def.Spouts = append(b.def.Spouts, ComponentDef{ID: id, Language: "go", Parallelism: parallelism, Tasks: parallelism, Streams: streams, Config: conf})
	b.spouts[id] = factory
	d.idx = len(b.def.Spouts) - 1
	d.ok = true
	return d
}

// SetBolt adds a bolt; see SetSpout.
func (b *TopologyBuilder) SetBolt(id string, factory func() Bolt, parallelism int) *BoltDeclarer {
	d := &BoltDeclarer{b: b, id: id}
	if factory == nil {
		b.errorf("bolt %q has a nil factory", id)
		return d
	}
	if !b.addComponent(id, parallelism) {
		return d
	}
	var streams []StreamDef
	var conf Config
	if bo := factory(); bo == nil {
		b.errorf("bolt %q: factory returned nil", id)
	} else {
		streams = b.declare(id, bo.DeclareOutputFields)
		var instance any = bo
		if a, ok := bo.(*basicBoltAdapter); ok {
			instance = a.b
		}
		conf = b.componentConfig("bolt", id, instance)
	}
	b.def.Bolts = append(b.def.Bolts, ComponentDef{ID: id, Language: "go", Parallelism: parallelism, Tasks: parallelism, Streams: streams, Config: conf})
	b.bolts[id] = factory
	d.idx = len(b.def.Bolts) - 1
	d.ok = true
	return d
}

// SetBasicBolt adds a BasicBolt: anchoring and acking are automatic.
func (b *TopologyBuilder) SetBasicBolt(id string, factory func() BasicBolt, parallelism int) *BoltDeclarer {
	if factory == nil {
		return b.SetBolt(id, nil, parallelism)
	}
	return b.SetBolt(id, func() Bolt {
		bb := factory()
		if bb == nil {
			return nil
		}
		return &basicBoltAdapter{b: bb}
	}, parallelism)
}

// SpoutDeclarer configures a spout added with SetSpout.
type SpoutDeclarer struct {
	b   *TopologyBuilder
	id  string
	idx int
	ok  bool
}

func (d *SpoutDeclarer) def() *ComponentDef {
	if !d.ok {
		return &ComponentDef{}
	}
	return &d.b.def.Spouts[d.idx]
}

// SetNumTasks sets the number of tasks (default: the parallelism).
func (d *SpoutDeclarer) SetNumTasks(n int) *SpoutDeclarer { d.def().Tasks = n; return d }

// AddConfiguration sets a per-component config key, overriding the
// spout's own ComponentConfiguration for that key.
func (d *SpoutDeclarer) AddConfiguration(key string, value any) *SpoutDeclarer {
	c := d.def()
	if c.Config == nil {
		c.Config = Config{}
	}
	c.Config[key] = value
	return d
}

// SetMaxSpoutPending sets topology.max.spout.pending for this spout.
func (d *SpoutDeclarer) SetMaxSpoutPending(n int) *SpoutDeclarer {
	return d.AddConfiguration("topology.max.spout.pending", n)
}

// BoltDeclarer configures a bolt added with SetBolt and subscribes it to
// streams.
type BoltDeclarer struct {
	b   *TopologyBuilder
	id  string
	idx int
	ok  bool
}

func (d *BoltDeclarer) def() *ComponentDef {
	if !d.ok {
		return &ComponentDef{}
	}
	return &d.b.def.Bolts[d.idx]
}

// SetNumTasks sets the number of tasks (default: the parallelism).
func (d *BoltDeclarer) SetNumTasks(n int) *BoltDeclarer { d.def().Tasks = n; return d }

// AddConfiguration sets a per-component config key, overriding the
// bolt's own ComponentConfiguration for that key.
func (d *BoltDeclarer) AddConfiguration(key string, value any) *BoltDeclarer {
	c := d.def()
	if c.Config == nil {
		c.Config = Config{}
	}
	c.Config[key] = value
	return d
}

// Grouping subscribes the bolt to a component's stream with a grouping.
func (d *BoltDeclarer) Grouping(component, stream string, g Grouping) *BoltDeclarer {
	if g.def.Type == "" {
		d.b.errorf("bolt %q: input %s:%s has no grouping", d.id, component, stream)
		return d
	}
	if g.def.Type == GroupingCustom {
		if g.factory == nil {
			d.b.errorf("bolt %q: custom grouping %q on input %s:%s has a nil factory", d.id, g.def.Custom, component, stream)
			return d
		}
		d.b.customs[g.def.Custom] = g.factory
	}
	c := d.def()
	c.Inputs = append(c.Inputs, InputDef{Component: component, Stream: stream, Grouping: g.def})
	return d
}

// ShuffleGrouping subscribes to component's default stream, spreading
// tuples evenly over the bolt's tasks.
func (d *BoltDeclarer) ShuffleGrouping(component string) *BoltDeclarer {
	return d.Grouping(component, DefaultStream, Shuffle())
}

// FieldsGrouping subscribes to component's default stream; tuples with
// equal values of fields go to the same task.
func (d *BoltDeclarer) FieldsGrouping(component string, fields ...string) *BoltDeclarer {
	return d.Grouping(component, DefaultStream, ByFields(fields...))
}

// PartialKeyGrouping subscribes to component's default stream with
// Storm's partial key grouping: a key (the values of fields) goes to one of
// two candidate tasks chosen by two hashes of it, whichever the emitting
// task has sent fewer tuples to. A hot key's tuples are split over two
// tasks instead of saturating one, so a bolt grouped this way holds
// partial results per key, which a bolt downstream merges (by a fields
// grouping on the key).
func (d *BoltDeclarer) PartialKeyGrouping(component string, fields ...string) *BoltDeclarer {
	return d.Grouping(component, DefaultStream, PartialKey(fields...))
}

// AllGrouping subscribes to component's default stream; every task gets
// every tuple.
func (d *BoltDeclarer) AllGrouping(component string) *BoltDeclarer {
	return d.Grouping(component, DefaultStream, All())
}

// GlobalGrouping subscribes to component's default stream; every tuple goes
// to the bolt's lowest task.
func (d *BoltDeclarer) GlobalGrouping(component string) *BoltDeclarer {
	return d.Grouping(component, DefaultStream, Global())
}

// LocalOrShuffleGrouping prefers tasks in the emitter's worker process.
func (d *BoltDeclarer) LocalOrShuffleGrouping(component string) *BoltDeclarer {
	return d.Grouping(component, DefaultStream, LocalOrShuffle())
}

// NoneGrouping: the bolt does not care; currently the same as shuffle.
func (d *BoltDeclarer) NoneGrouping(component string) *BoltDeclarer {
	return d.Grouping(component, DefaultStream, None())
}

// DirectGrouping subscribes to a direct stream of component: the emitter
// picks the task with EmitDirect.
func (d *BoltDeclarer) DirectGrouping(component, stream string) *BoltDeclarer {
	return d.Grouping(component, stream, Direct())
}

// CustomGrouping subscribes with a user-defined grouping; name identifies it
// in the topology definition and factory makes one per emitting task.
func (d *BoltDeclarer) CustomGrouping(component, stream, name string, factory func() CustomGrouping) *BoltDeclarer {
	return d.Grouping(component, stream, Custom(name, factory))
}

// Grouping is a stream grouping; make one with Shuffle, ByFields,
// PartialKey, All, Global, LocalOrShuffle, Direct, None or Custom.
type Grouping struct {
	def     GroupingDef
	factory func() CustomGrouping
}

// Shuffle spreads tuples evenly over the consumer's tasks.
func Shuffle() Grouping { return Grouping{def: GroupingDef{Type: GroupingShuffle}} }

// ByFields sends tuples with equal values of the fields to the same task.
func ByFields(fields ...string) Grouping {
	return Grouping{def: GroupingDef{Type: GroupingFields, Fields: slices.Clone(fields)}}
}

// PartialKey sends each key (the values of fields) to the less loaded of
// two candidate tasks that two hashes of it choose; see
// BoltDeclarer.PartialKeyGrouping.
func PartialKey(fields ...string) Grouping {
	return Grouping{def: GroupingDef{Type: GroupingPartialKey, Fields: slices.Clone(fields)}}
}

// All sends every tuple to every task.
func All() Grouping { return Grouping{def: GroupingDef{Type: GroupingAll}} }

// Global sends every tuple to the consumer's lowest task.
func Global() Grouping { return Grouping{def: GroupingDef{Type: GroupingGlobal}} }

// LocalOrShuffle prefers tasks in the emitter's worker, shuffling among them.
func LocalOrShuffle() Grouping { return Grouping{def: GroupingDef{Type: GroupingLocalOrShuffle}} }

// Direct lets the emitter choose the task (EmitDirect); the stream must be
// declared with DeclareDirectStream.
func Direct() Grouping { return Grouping{def: GroupingDef{Type: GroupingDirect}} }

// None means the consumer does not care; it behaves as Shuffle.
func None() Grouping { return Grouping{def: GroupingDef{Type: GroupingNone}} }

// Custom is a user-defined grouping. factory is called once per emitting
// task, so the grouping may keep state without locking.
func Custom(name string, factory func() CustomGrouping) Grouping {
	return Grouping{def: GroupingDef{Type: GroupingCustom, Custom: name}, factory: factory}
}

// CustomGrouping chooses the consumer tasks of each tuple.
type CustomGrouping interface {
	// Prepare is called once with the consumer's task ids.
	Prepare(component, stream string, targetTasks []int)
	// ChooseTasks returns the tasks (a subset of targetTasks) that get a
	// tuple emitted by task with values. Values must not be retained.
	ChooseTasks(task int, values []any) []int
}

// Build validates the topology and returns it. Every problem found is
// reported, each naming the component, stream or field at fault.
func (b *TopologyBuilder) Build() (*Topology, error) {
	errs := slices.Clone(b.errs)
	if err := b.def.Validate(); err != nil {
		errs = append(errs, err)
	}
	for name := range b.customs {
		if name == "" {
			errs = append(errs, fmt.Errorf("%w: a custom grouping has an empty name", ErrInvalidTopology))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	t := &Topology{Def: b.def, spouts: b.spouts, bolts: b.bolts, customs: b.customs}
	// Deep-copy the definition so later builder calls cannot change it.
	t.Def = cloneDef(b.def)
	t.types = b.types.Clone()
	return t, nil
}

// TypeCodec encodes and decodes the values of one user type for the wire
// between workers: the role a Kryo serializer registered with Storm's
// Config.registerSerialization plays. Append appends the encoding of v
// (always of the registered type) to dst; Decode gets exactly those bytes
// back and must return an error, not panic, on bytes Append could not have
// written. Both must be safe for concurrent use.
type TypeCodec = codec.TypeCodec

// RegisterType registers a user type that tuples may carry between worker
// processes, encoded by c, under a name unique in the topology (for
// messages and the topology definition). Values of the built-in types
// (nil, bool, integers, floats, string, []byte, time.Time, []any,
// map[string]any) need no registration; emitting any other type to a task
// in another worker is an error naming the component, stream and type
// (topology.testing.always.try.serialize checks every emit, in tests).
func (b *TopologyBuilder) RegisterType(t reflect.Type, name string, c TypeCodec) {
	if err := b.types.Register(t, name, c); err != nil {
		b.errs = append(b.errs, fmt.Errorf("%w: %w", ErrInvalidTopology, err))
		return
	}
	b.def.Types = append(b.def.Types, TypeDef{Name: name, GoType: t.String()})
}

func cloneDef(d TopologyDef) TopologyDef {
	cp := func(cs []ComponentDef) []ComponentDef {
		out := make([]ComponentDef, len(cs))
		for i, c := range cs {
			c.Streams = append([]StreamDef{}, c.Streams...)
			c.Inputs = slices.Clone(c.Inputs)
			if c.Config != nil {
				cc := make(Config, len(c.Config))
				for k, v := range c.Config {
					cc[k] = v
				}
				c.Config = cc
			}
			out[i] = c
		}
		return out
	}
	return TopologyDef{Spouts: cp(d.Spouts), Bolts: cp(d.Bolts), Types: slices.Clone(d.Types)}
}

// Validate checks the definition's structure: ids, parallelism, streams,
// fields and groupings. Errors name the component, stream or field.
func (d *TopologyDef) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidTopology}, args...)...))
	}
	if len(d.Spouts) == 0 {
		bad("a topology needs at least one spout")
	}
	seen := map[string]bool{}
	check := func(kind string, c *ComponentDef) {
		switch {
		case c.ID == "":
			bad("a %s has an empty id", kind)
		case strings.HasPrefix(c.ID, "__"):
			bad("%s id %q: ids starting with \"__\" are reserved for system components", kind, c.ID)
		case seen[c.ID]:
			bad("component id %q is used twice; ids must be unique across spouts and bolts", c.ID)
		}
		seen[c.ID] = true
		if c.Language != "" && c.Language != "go" {
			bad("%s %q: language %q is not supported (supported: go)", kind, c.ID, c.Language)
		}
		if c.Parallelism < 1 {
			bad("%s %q: parallelism must be ≥ 1, got %d", kind, c.ID, c.Parallelism)
		}
		if c.Tasks < 1 {
			bad("%s %q: number of tasks must be ≥ 1, got %d", kind, c.ID, c.Tasks)
		}
		streams := map[string]bool{}
		for _, s := range c.Streams {
			if streams[s.ID] {
				bad("%s %q declares stream %q twice", kind, c.ID, s.ID)
			}
			streams[s.ID] = true
			if strings.HasPrefix(s.ID, "__") {
				bad("%s %q: stream id %q: ids starting with \"__\" are reserved", kind, c.ID, s.ID)
			}
			fields := map[string]bool{}
			for _, f := range s.Fields {
				if f == "" {
					bad("%s %q stream %q has an empty field name", kind, c.ID, s.ID)
				}
				if fields[f] {
					bad("%s %q stream %q declares field %q twice", kind, c.ID, s.ID, f)
				}
				fields[f] = true
			}
		}
		if c.Config != nil {
			if err := config.Validate(c.Config, config.LayerComponent); err != nil {
				errs = append(errs, fmt.Errorf("%w: %s %q: %w", ErrInvalidTopology, kind, c.ID, err))
			}
		}
	}
	for i := range d.Spouts {
		check("spout", &d.Spouts[i])
		if len(d.Spouts[i].Inputs) > 0 {
			bad("spout %q has inputs; only bolts subscribe to streams", d.Spouts[i].ID)
		}
	}
	for i := range d.Bolts {
		check("bolt", &d.Bolts[i])
	}
	for i := range d.Bolts {
		c := &d.Bolts[i]
		if len(c.Inputs) == 0 {
			bad("bolt %q has no inputs; subscribe it to a stream (e.g. ShuffleGrouping)", c.ID)
		}
		subscribed := map[[2]string]bool{}
		for _, in := range c.Inputs {
			key := [2]string{in.Component, in.Stream}
			if subscribed[key] {
				bad("bolt %q subscribes to %s:%s twice", c.ID, in.Component, in.Stream)
			}
			subscribed[key] = true
			src, ok := d.Component(in.Component)
			if !ok {
				bad("bolt %q subscribes to unknown component %q", c.ID, in.Component)
				continue
			}
			s, ok := src.Stream(in.Stream)
			if !ok {
				var names []string
				for _, s := range src.Streams {
					names = append(names, s.ID)
				}
				bad("bolt %q subscribes to stream %q of %q, which %q does not declare (declared: %v)", c.ID, in.Stream, in.Component, in.Component, names)
				continue
			}
			g := in.Grouping
			switch g.Type {
			case GroupingShuffle, GroupingAll, GroupingGlobal, GroupingLocalOrShuffle, GroupingNone, GroupingCustom:
				if s.Direct {
					bad("bolt %q subscribes to direct stream %s:%s with %s grouping; a direct stream needs direct grouping", c.ID, in.Component, in.Stream, g.Type)
				}
				if g.Type == GroupingCustom && g.Custom == "" {
					bad("bolt %q: custom grouping on %s:%s has no name", c.ID, in.Component, in.Stream)
				}
			case GroupingFields, GroupingPartialKey:
				name := "fields"
				if g.Type == GroupingPartialKey {
					name = "partial key"
				}
				if s.Direct {
					bad("bolt %q subscribes to direct stream %s:%s with %s grouping; a direct stream needs direct grouping", c.ID, in.Component, in.Stream, name)
				}
				if len(g.Fields) == 0 {
					bad("bolt %q: %s grouping on %s:%s names no fields", c.ID, name, in.Component, in.Stream)
				}
				for _, f := range g.Fields {
					if !slices.Contains(s.Fields, f) {
						bad("bolt %q groups %s:%s by field %q, which the stream does not declare (fields: %v)", c.ID, in.Component, in.Stream, f, s.Fields)
					}
				}
			case GroupingDirect:
				if !s.Direct {
					bad("bolt %q uses direct grouping on %s:%s, which is not a direct stream; declare it with DeclareDirectStream", c.ID, in.Component, in.Stream)
				}
			default:
				bad("bolt %q: unknown grouping type %q on %s:%s", c.ID, g.Type, in.Component, in.Stream)
			}
		}
	}
	typeNames := map[string]bool{}
	for i, t := range d.Types {
		switch {
		case t.Name == "":
			bad("registered type %d (%s) has an empty name", i, t.GoType)
		case typeNames[t.Name]:
			bad("type name %q is registered twice", t.Name)
		case t.GoType == "":
			bad("registered type %q has no Go type", t.Name)
		}
		typeNames[t.Name] = true
	}
	return errors.Join(errs...)
}
