package config

import (
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

func TestConfigDefaults(t *testing.T) {
	e, err := Resolve(nil, nil)
	if err != nil {
		t.Fatalf("Resolve(nil, nil): got error %v, want nil", err)
	}
	tests := []struct {
		key  string
		want any // nil = unset
	}{
		{TopologyWorkers, 1},
		{TopologyMessageTimeoutSecs, 30},
		{TopologyMaxSpoutPending, nil},
		{TopologyMaxSpoutPendingAutotune, false},
		{TopologyMaxSpoutPendingAutotuneIntervalSecs, nil},
		{TopologyAckerExecutors, nil},
		{TopologyTickTupleFreqSecs, nil},
		{TopologyExecutorReceiveBufferSize, 1024},
		{TopologyTransferBufferSize, 256},
		{TopologyProducerBatchSize, 100},
		{TopologyDebug, false},
		{TopologyMaxTaskParallelism, nil},
		{TopologyName, nil},
		{TopologyShutdownDrainTimeoutSecs, 5},
		{TopologyComponentPanicPolicy, PanicPolicyFailTuple},
		{TopologyTupleReuse, false},
		{TopologyStatsEnabled, true},
		{TopologyStatsSampleRate, nil},
		{TopologyMinReplicationCount, 1},
		{TopologyMaxReplicationWaitTimeSec, 60},
		{WorkerGOGC, 400},
		{WorkerGCFloorMB, 64},
		{WorkerHeapPretouch, true},
		{TopologyTestingAlwaysTrySerialize, false},
		{WorkerHeapMemoryMB, 768},
		{WorkerCPUPinning, false},
		{WorkerMetricsPort, 0},
		{SupervisorSlotsPorts, []int{6700, 6701, 6702, 6703}},
		{SupervisorHeartbeatFrequencySecs, 5},
		{SupervisorWorkerTimeoutSecs, 30},
		{SupervisorWorkerStartTimeoutSecs, 120},
		{SupervisorArtifactRetentionSecs, 600},
		{NimbusSeeds, []string{"127.0.0.1"}},
		{NimbusThriftPort, 6627},
		{NimbusSupervisorTimeoutSecs, 10},
		{NimbusMonitorFreqSecs, 10},
		{NimbusAuthToken, nil},
		{NimbusAuthTokenFile, nil},
		{NimbusTLSCert, nil},
		{NimbusTLSKey, nil},
		{NimbusArtifactMaxMB, 512},
		{NimbusExecutorsPerTopology, 10000},
		{NimbusTasksPerTopology, 100000},
		{WorkerHeartbeatFrequencySecs, 1},
		{UIPort, 8080},
		{GaleEtcdEndpoints, []string{"127.0.0.1:2379"}},
		{GaleEtcdTLSCA, nil},
		{GaleEtcdTLSCert, nil},
		{GaleEtcdTLSKey, nil},
		{GaleEtcdUsername, nil},
		{GaleEtcdPassword, nil},
		{GaleEtcdPasswordFile, nil},
		{IsolationSchedulerMachines, map[string]int{}},
	}
	if len(tests) != len(configKeySpecs) {
		t.Errorf("test covers %d keys, want all %d", len(tests), len(configKeySpecs))
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			got, ok := e.Map()[tt.key]
			if tt.want == nil {
				if ok {
					t.Errorf("got %v, want unset", got)
				}
			} else if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
			if src := e.Source(tt.key); src != LayerDefault {
				t.Errorf("Source: got %v, want %v", src, LayerDefault)
			}
		})
	}
}

// TestConfigRegistry checks the registry's own invariants: every default
// passes its key's checks, docs are present, and exactly the topology.*
// keys (but topology.name) may be set by topology config.
func TestConfigRegistry(t *testing.T) {
	for _, s := range configKeySpecs {
		t.Run(s.name, func(t *testing.T) {
			if s.doc == "" || strings.Contains(s.doc, "\n") {
				t.Errorf("doc: got %q, want one non-empty line", s.doc)
			}
			isTopology := strings.HasPrefix(s.name, "topology.") && s.name != TopologyName
			gotTopology := s.scope == ScopeTopology || s.scope == ScopeComponent
			if gotTopology != isTopology {
				t.Errorf("scope: got %v, want topology or component scope exactly for topology.* keys", s.scope)
			}
			if s.def == nil {
				return
			}
			if err := Validate(Config{s.name: s.def}, LayerDefault); err != nil {
				t.Errorf("default %v: got error %v, want nil", s.def, err)
			}
		})
	}
	for old, key := range renamedConfigKeys {
		if configKeyIndex[old] != nil {
			t.Errorf("renamed key %q is still known", old)
		}
		if spec := configKeyIndex[key]; spec == nil || spec.scope != ScopeCluster {
			t.Errorf("renamed key %q: its new name %q is not a cluster key", old, key)
		}
	}
}

func TestResolveConfigLayers(t *testing.T) {
	tests := []struct {
		name       string
		file       Config
		topology   Config
		component  Config // nil = topology level
		key        string
		want       any // nil = unset
		wantSource Layer
	}{
		{"default", nil, nil, nil, TopologyWorkers, 1, LayerDefault},
		{"file overrides default", Config{TopologyWorkers: 3}, nil, nil, TopologyWorkers, 3, LayerFile},
		{"topology overrides file", Config{TopologyWorkers: 3}, Config{TopologyWorkers: 4}, nil, TopologyWorkers, 4, LayerTopology},
		{"topology overrides default", nil, Config{TopologyMessageTimeoutSecs: 60}, nil, TopologyMessageTimeoutSecs, 60, LayerTopology},
		{"file sets cluster key", Config{UIPort: 9090}, nil, nil, UIPort, 9090, LayerFile},
		{"file sets list", Config{SupervisorSlotsPorts: []any{7000, 7001}}, nil, nil, SupervisorSlotsPorts, []int{7000, 7001}, LayerFile},
		{"file sets unset-by-default key", Config{TopologyMaxSpoutPending: 500}, nil, nil, TopologyMaxSpoutPending, 500, LayerFile},
		{"topology null unsets file value", Config{TopologyMaxSpoutPending: 500}, Config{TopologyMaxSpoutPending: nil}, nil, TopologyMaxSpoutPending, nil, LayerTopology},
		{"component overrides topology", nil, Config{TopologyDebug: true}, Config{TopologyDebug: false}, TopologyDebug, false, LayerComponent},
		{"component overrides file", Config{TopologyMaxSpoutPending: 500}, nil, Config{TopologyMaxSpoutPending: 10}, TopologyMaxSpoutPending, 10, LayerComponent},
		{"component overrides default", nil, nil, Config{TopologyComponentPanicPolicy: PanicPolicyKillWorker}, TopologyComponentPanicPolicy, PanicPolicyKillWorker, LayerComponent},
		{"component inherits topology", nil, Config{TopologyTickTupleFreqSecs: 5}, Config{TopologyDebug: true}, TopologyTickTupleFreqSecs, 5, LayerTopology},
		{"component inherits default", nil, nil, Config{}, TopologyWorkers, 1, LayerDefault},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Resolve(tt.file, tt.topology)
			if err != nil {
				t.Fatalf("Resolve: got error %v, want nil", err)
			}
			if tt.component != nil {
				if e, err = e.ForComponent("split", tt.component); err != nil {
					t.Fatalf("ForComponent: got error %v, want nil", err)
				}
			}
			got, ok := e.Map()[tt.key]
			if tt.want == nil {
				if ok {
					t.Errorf("value: got %v, want unset", got)
				}
			} else if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("value: got %#v, want %#v", got, tt.want)
			}
			if src := e.Source(tt.key); src != tt.wantSource {
				t.Errorf("Source: got %v, want %v", src, tt.wantSource)
			}
		})
	}
}

func TestEffectiveGetters(t *testing.T) {
	e, err := Resolve(
		Config{NimbusSeeds: []any{"n1", "n2"}, SupervisorSlotsPorts: []any{6700}},
		Config{TopologyWorkers: 2, TopologyDebug: true, TopologyComponentPanicPolicy: PanicPolicyKillWorker},
	)
	if err != nil {
		t.Fatalf("Resolve: got error %v, want nil", err)
	}
	if v, set := e.Int(TopologyWorkers); v != 2 || !set {
		t.Errorf("Int(%s): got %d, %t, want 2, true", TopologyWorkers, v, set)
	}
	if v, set := e.Int(TopologyMaxSpoutPending); v != 0 || set {
		t.Errorf("Int(%s): got %d, %t, want 0, false", TopologyMaxSpoutPending, v, set)
	}
	if got := e.Bool(TopologyDebug); !got {
		t.Errorf("Bool(%s): got %t, want true", TopologyDebug, got)
	}
	if got := e.String(TopologyComponentPanicPolicy); got != PanicPolicyKillWorker {
		t.Errorf("String(%s): got %q, want %q", TopologyComponentPanicPolicy, got, PanicPolicyKillWorker)
	}
	if got := e.String(TopologyName); got != "" {
		t.Errorf("String(%s) before WithTopologyName: got %q, want \"\"", TopologyName, got)
	}
	if got, want := e.Strings(NimbusSeeds), []string{"n1", "n2"}; !slices.Equal(got, want) {
		t.Errorf("Strings(%s): got %v, want %v", NimbusSeeds, got, want)
	}
	ports := e.Ints(SupervisorSlotsPorts)
	if want := []int{6700}; !slices.Equal(ports, want) {
		t.Errorf("Ints(%s): got %v, want %v", SupervisorSlotsPorts, ports, want)
	}
	ports[0] = 1 // must not write through to e
	if got := e.Ints(SupervisorSlotsPorts)[0]; got != 6700 {
		t.Errorf("Ints after caller modified its copy: got %d, want 6700", got)
	}

	named := e.WithTopologyName("wordcount")
	if got := named.String(TopologyName); got != "wordcount" {
		t.Errorf("String(%s) after WithTopologyName: got %q, want %q", TopologyName, got, "wordcount")
	}
	if got := named.Source(TopologyName); got != LayerTopology {
		t.Errorf("Source(%s): got %v, want %v", TopologyName, got, LayerTopology)
	}
	if got := e.String(TopologyName); got != "" {
		t.Errorf("WithTopologyName modified its receiver: got %q, want \"\"", got)
	}
}

func TestEffectiveGetterPanics(t *testing.T) {
	e, err := Resolve(nil, nil)
	if err != nil {
		t.Fatalf("Resolve: got error %v, want nil", err)
	}
	tests := []struct {
		name    string
		call    func()
		wantMsg string
	}{
		{"Int of unknown key", func() { e.Int("topology.wokers") }, `unknown config key "topology.wokers"`},
		{"Int of bool key", func() { e.Int(TopologyDebug) }, `is a boolean (true or false), not an integer`},
		{"Bool of int key", func() { e.Bool(TopologyWorkers) }, `is an integer, not a boolean`},
		{"Strings of int list", func() { e.Strings(SupervisorSlotsPorts) }, `is a list of integers, not a list of strings`},
		{"IntMap of int list", func() { e.IntMap(SupervisorSlotsPorts) }, `is a list of integers, not a mapping of names to integers`},
		{"Source of unknown key", func() { e.Source("nope") }, `unknown config key "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				r := recover()
				msg, _ := r.(string)
				if !strings.Contains(msg, tt.wantMsg) {
					t.Errorf("panic: got %v, want one containing %q", r, tt.wantMsg)
				}
			}()
			tt.call()
		})
	}
}

func TestConfigValidateErrors(t *testing.T) {
	tests := []struct {
		name    string
		layer   Layer
		config  Config
		wantIs  error
		wantMsg string // the whole message
	}{
		{"unknown key with suggestion", LayerTopology, Config{"topology.wokers": 2}, ErrUnknownKey,
			`config: unknown key "topology.wokers" in topology config (did you mean "topology.workers"?)`},
		{"unknown key in other case", LayerFile, Config{"UI.Port": 80}, ErrUnknownKey,
			`config: unknown key "UI.Port" in gale.yaml (did you mean "ui.port"?)`},
		{"unknown key missing a word", LayerFile, Config{"topology.max.pending": 80}, ErrUnknownKey,
			`config: unknown key "topology.max.pending" in gale.yaml (did you mean "topology.max.spout.pending"?)`},
		{"renamed key", LayerFile, Config{"topology.worker.gogc": 300}, ErrUnknownKey,
			`config: unknown key "topology.worker.gogc" in gale.yaml (did you mean "worker.gogc"? it is a cluster setting, set in gale.yaml)`},
		{"unknown key without suggestion", LayerFile, Config{"storm.colour": "blue"}, ErrUnknownKey,
			`config: unknown key "storm.colour" in gale.yaml (run "gale config show" to list the known keys)`},
		{"misspelt namespace", LayerTopology, Config{"toplogy.workers": 2}, ErrUnknownKey,
			`config: unknown key "toplogy.workers" in topology config (did you mean "topology.workers"?)`},
		{"misspelt namespace, no such key", LayerTopology, Config{"topolgy.top.n": 2}, ErrUnknownKey,
			`config: unknown key "topolgy.top.n" in topology config (did you mean a key under "topology."? a key of your own must not look like one of Gale's namespaces)`},
		{"Storm key Gale refuses", LayerTopology, Config{"topology.kryo.register": []any{"a.B"}}, ErrUnsupportedKey,
			`config: "topology.kryo.register" in topology config is not supported by Gale: ` + noteKryo},
		{"Storm cluster key Gale refuses", LayerFile, Config{"nimbus.task.timeout.secs": 30}, ErrUnsupportedKey,
			`config: "nimbus.task.timeout.secs" in gale.yaml is not supported by Gale: nimbus does not watch executors: a worker's supervisor restarts it after supervisor.worker.timeout.secs without a heartbeat, and a lost machine's workers move after nimbus.supervisor.timeout.secs. Remove the key`},
		{"user key with no JSON form", LayerTopology, Config{"starter.hook": func() {}}, ErrWrongType,
			`config: user key "starter.hook" in topology config must be a value JSON can carry (a user key's value travels to every worker as JSON), got a value of Go type func(): json: unsupported type: func()`},
		{"user key too large", LayerTopology, Config{"starter.blob": strings.Repeat("x", 64<<10)}, ErrOutOfRange,
			`config: user key "starter.blob" in topology config is 65538 bytes as JSON, over the limit of 64 KiB for a user key's value; put large data in a file or a store and the key's value its name`},
		{"nested mapping", LayerFile, Config{"nimbus": map[string]any{"seeds": []any{"a"}}}, ErrUnknownKey,
			`config: unknown key "nimbus" in gale.yaml (keys are flat, dotted names such as "nimbus.artifact.max.mb", not nested mappings)`},

		{"string for int", LayerFile, Config{TopologyWorkers: "two"}, ErrWrongType,
			`config: "topology.workers" in gale.yaml must be an integer, got string "two"`},
		{"numeric string for int", LayerFile, Config{TopologyWorkers: "2"}, ErrWrongType,
			`config: "topology.workers" in gale.yaml must be an integer, got string "2"`},
		{"fraction for int", LayerTopology, Config{TopologyWorkers: 1.5}, ErrWrongType,
			`config: "topology.workers" in topology config must be an integer, got number 1.5`},
		{"NaN for int", LayerTopology, Config{TopologyWorkers: math.NaN()}, ErrWrongType,
			`config: "topology.workers" in topology config must be an integer, got number NaN`},
		{"bool for int", LayerTopology, Config{TopologyWorkers: true}, ErrWrongType,
			`config: "topology.workers" in topology config must be an integer, got boolean true`},
		{"int for bool", LayerTopology, Config{TopologyDebug: 1}, ErrWrongType,
			`config: "topology.debug" in topology config must be a boolean (true or false), got integer 1`},
		{"string for bool", LayerTopology, Config{TopologyDebug: "yes"}, ErrWrongType,
			`config: "topology.debug" in topology config must be a boolean (true or false), got string "yes"`},
		{"int for string", LayerTopology, Config{TopologyComponentPanicPolicy: 1}, ErrWrongType,
			`config: "topology.component.panic.policy" in topology config must be a string, got integer 1`},
		{"list element of wrong type", LayerFile, Config{SupervisorSlotsPorts: []any{6700, "6701"}}, ErrWrongType,
			`config: "supervisor.slots.ports" in gale.yaml must be a list of integers, got string "6701" at index 1`},
		{"fractional list element", LayerFile, Config{SupervisorSlotsPorts: []any{6700.5}}, ErrWrongType,
			`config: "supervisor.slots.ports" in gale.yaml must be a list of integers, got number 6700.5 at index 0`},
		{"string list element of wrong type", LayerFile, Config{NimbusSeeds: []any{"n1", 2}}, ErrWrongType,
			`config: "nimbus.seeds" in gale.yaml must be a list of strings, got integer 2 at index 1`},
		{"scalar for list", LayerFile, Config{NimbusSeeds: "n1"}, ErrWrongType,
			`config: "nimbus.seeds" in gale.yaml must be a list of strings, got string "n1"`},
		{"mapping for int", LayerFile, Config{UIPort: map[string]any{"a": 1}}, ErrWrongType,
			`config: "ui.port" in gale.yaml must be an integer, got a mapping`},
		{"null for key with a default", LayerTopology, Config{TopologyWorkers: nil}, ErrWrongType,
			`config: "topology.workers" in topology config must be an integer, got null (remove the key to keep the default 1)`},
		{"int too large", LayerTopology, Config{TopologyWorkers: uint64(math.MaxUint64)}, ErrOutOfRange,
			`config: "topology.workers" in topology config is out of range: must be ≥ 1 and ≤ 9223372036854775807, got integer 18446744073709551615`},
		{"float too large", LayerTopology, Config{TopologyWorkers: 1e300}, ErrOutOfRange,
			`config: "topology.workers" in topology config is out of range: must be ≥ 1 and ≤ 9223372036854775807, got number 1e+300`},
		{"float too small", LayerTopology, Config{TopologyWorkers: -1e300}, ErrOutOfRange,
			`config: "topology.workers" in topology config is out of range: must be ≥ 1, got number -1e+300`},
		{"JSON number too large", LayerTopology, Config{TopologyWorkers: json.Number("99999999999999999999")}, ErrOutOfRange,
			`config: "topology.workers" in topology config is out of range: must be ≥ 1 and ≤ 9223372036854775807, got number 99999999999999999999`},
		{"JSON number too large for a port", LayerFile, Config{UIPort: json.Number("99999999999999999999")}, ErrOutOfRange,
			`config: "ui.port" in gale.yaml is out of range: must be a port number from 0 to 65535, got number 99999999999999999999`},
		{"JSON number too small, no lower bound", LayerTopology, Config{TopologyMaxSpoutPending: json.Number("-99999999999999999999")}, ErrOutOfRange,
			`config: "topology.max.spout.pending" in topology config is out of range: must be ≥ 1, got number -99999999999999999999`},

		{"cluster key in topology config", LayerTopology, Config{SupervisorSlotsPorts: []any{1}}, ErrForbiddenOverride,
			`config: "supervisor.slots.ports" may not be set in topology config (only topology.* keys may; set it in gale.yaml)`},
		{"topology.name in topology config", LayerTopology, Config{TopologyName: "x"}, ErrForbiddenOverride,
			`config: "topology.name" may not be set in topology config (Gale sets it; remove it)`},
		{"topology.name in gale.yaml", LayerFile, Config{TopologyName: "x"}, ErrForbiddenOverride,
			`config: "topology.name" may not be set in gale.yaml (Gale sets it; remove it)`},
		{"topology key per component", LayerComponent, Config{TopologyWorkers: 2}, ErrForbiddenOverride,
			`config: "topology.workers" may not be set in component config (allowed: topology.component.panic.policy, topology.debug, topology.max.spout.pending, topology.max.spout.pending.autotune, topology.max.spout.pending.autotune.interval.secs, topology.max.task.parallelism, topology.tick.tuple.freq.secs, topology.tuple.reuse; set it in topology config)`},
		{"cluster key per component", LayerComponent, Config{UIPort: 1}, ErrForbiddenOverride,
			`config: "ui.port" may not be set in component config (allowed: topology.component.panic.policy, topology.debug, topology.max.spout.pending, topology.max.spout.pending.autotune, topology.max.spout.pending.autotune.interval.secs, topology.max.task.parallelism, topology.tick.tuple.freq.secs, topology.tuple.reuse; set it in gale.yaml)`},

		{"zero workers", LayerTopology, Config{TopologyWorkers: 0}, ErrOutOfRange,
			`config: "topology.workers" in topology config must be ≥ 1, got 0`},
		{"zero message timeout", LayerTopology, Config{TopologyMessageTimeoutSecs: 0}, ErrOutOfRange,
			`config: "topology.message.timeout.secs" in topology config must be ≥ 1, got 0`},
		{"zero max spout pending", LayerTopology, Config{TopologyMaxSpoutPending: 0}, ErrOutOfRange,
			`config: "topology.max.spout.pending" in topology config must be ≥ 1, got 0`},
		{"negative acker executors", LayerTopology, Config{TopologyAckerExecutors: -1}, ErrOutOfRange,
			`config: "topology.acker.executors" in topology config must be ≥ 0, got -1`},
		{"negative drain timeout", LayerTopology, Config{TopologyShutdownDrainTimeoutSecs: -1}, ErrOutOfRange,
			`config: "topology.shutdown.drain.timeout.secs" in topology config must be ≥ 0, got -1`},
		{"unknown panic policy", LayerTopology, Config{TopologyComponentPanicPolicy: "explode"}, ErrOutOfRange,
			`config: "topology.component.panic.policy" in topology config must be one of "fail-tuple", "kill-worker", got "explode"`},
		{"port too large", LayerFile, Config{UIPort: 70000}, ErrOutOfRange,
			`config: "ui.port" in gale.yaml must be a port number from 0 to 65535, got 70000`},
		{"worker metrics port below -1", LayerFile, Config{WorkerMetricsPort: -2}, ErrOutOfRange,
			`config: "worker.metrics.port" in gale.yaml must be -1 (none) or a port number from 0 to 65535, got -2`},
		{"slot port zero", LayerFile, Config{SupervisorSlotsPorts: []any{6700, 0}}, ErrOutOfRange,
			`config: "supervisor.slots.ports" in gale.yaml must hold port numbers from 1 to 65535, got 0 at index 1`},
		{"slot port repeated", LayerFile, Config{SupervisorSlotsPorts: []any{6700, 6700}}, ErrOutOfRange,
			`config: "supervisor.slots.ports" in gale.yaml must not repeat a port, got 6700 twice`},
		{"no slots", LayerFile, Config{SupervisorSlotsPorts: []any{}}, ErrOutOfRange,
			`config: "supervisor.slots.ports" in gale.yaml must list at least one port`},
		{"no etcd endpoints", LayerFile, Config{GaleEtcdEndpoints: []any{}}, ErrOutOfRange,
			`config: "gale.etcd.endpoints" in gale.yaml must list at least one entry`},
		{"empty nimbus seed", LayerFile, Config{NimbusSeeds: []any{"n1", ""}}, ErrOutOfRange,
			`config: "nimbus.seeds" in gale.yaml must not hold empty strings, got one at index 1`},
	}
	sentinels := []error{ErrUnknownKey, ErrUnsupportedKey, ErrWrongType, ErrForbiddenOverride, ErrOutOfRange}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.config, tt.layer)
			if err == nil {
				t.Fatalf("got nil error, want %q", tt.wantMsg)
			}
			if got := err.Error(); got != tt.wantMsg {
				t.Errorf("message:\n got  %s\n want %s", got, tt.wantMsg)
			}
			for _, s := range sentinels {
				if got, want := errors.Is(err, s), s == tt.wantIs; got != want {
					t.Errorf("errors.Is(err, %v): got %t, want %t", s, got, want)
				}
			}
		})
	}
}

func TestConfigValidateAccepts(t *testing.T) {
	tests := []struct {
		name   string
		layer  Layer
		config Config
	}{
		{"nil config", LayerTopology, nil},
		{"no ackers", LayerTopology, Config{TopologyAckerExecutors: 0}},
		{"no drain", LayerTopology, Config{TopologyShutdownDrainTimeoutSecs: 0}},
		{"null unsets optional key", LayerTopology, Config{TopologyMaxSpoutPending: nil}},
		{"ephemeral ui port", LayerFile, Config{UIPort: 0}},
		{"topology keys in gale.yaml", LayerFile, Config{TopologyWorkers: 4, TopologyDebug: true}},
		{"every component key per component", LayerComponent, Config{
			TopologyDebug: true, TopologyMaxSpoutPending: 1, TopologyMaxTaskParallelism: 2,
			TopologyTickTupleFreqSecs: 3, TopologyComponentPanicPolicy: PanicPolicyKillWorker,
		}},
		{"typed Go slices", LayerFile, Config{SupervisorSlotsPorts: []int{1, 2}, NimbusSeeds: []string{"a"}}},
		{"anything in defaults", LayerDefault, Config{SupervisorSlotsPorts: []int{1}, TopologyName: "t"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := Validate(tt.config, tt.layer); err != nil {
				t.Errorf("got error %v, want nil", err)
			}
		})
	}
}

func TestConfigNumberTypes(t *testing.T) {
	tests := []struct {
		name string
		raw  any
	}{
		{"int", 7},
		{"int8", int8(7)},
		{"int16", int16(7)},
		{"int32", int32(7)},
		{"int64 (YAML negative, JSON via reflection)", int64(7)},
		{"uint", uint(7)},
		{"uint8", uint8(7)},
		{"uint16", uint16(7)},
		{"uint32", uint32(7)},
		{"uint64 (YAML)", uint64(7)},
		{"float32", float32(7)},
		{"float64 (encoding/json)", float64(7)},
		{"json.Number (Decoder.UseNumber)", json.Number("7")},
		{"json.Number in float form", json.Number("7.0")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Resolve(nil, Config{TopologyWorkers: tt.raw})
			if err != nil {
				t.Fatalf("got error %v, want nil", err)
			}
			if got, _ := e.Int(TopologyWorkers); got != 7 {
				t.Errorf("got %d, want 7", got)
			}
			e, err = Resolve(Config{SupervisorSlotsPorts: []any{tt.raw}}, nil)
			if err != nil {
				t.Fatalf("as list element: got error %v, want nil", err)
			}
			if got, want := e.Ints(SupervisorSlotsPorts), []int{7}; !slices.Equal(got, want) {
				t.Errorf("as list element: got %v, want %v", got, want)
			}
		})
	}
}

func TestConfigFloatKind(t *testing.T) {
	tests := []struct {
		name    string
		raw     any
		want    float64
		wantErr bool
	}{
		{"float64", 0.05, 0.05, false},
		{"int", 2, 2, false},
		{"uint64", uint64(3), 3, false},
		{"json.Number", json.Number("0.5"), 0.5, false},
		{"string", "0.5", 0, true},
		{"bool", true, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, sentinel, msg := normaliseConfigValue(configFloat, tt.raw)
			if tt.wantErr {
				if sentinel != ErrWrongType || msg == "" {
					t.Errorf("got %v, %v, %q, want ErrWrongType and a message", got, sentinel, msg)
				}
				return
			}
			if got != tt.want || sentinel != nil {
				t.Errorf("got %v, %v, %q, want %v, nil, \"\"", got, sentinel, msg, tt.want)
			}
		})
	}
}

func TestConfigFromDecoders(t *testing.T) {
	const jsonDoc = `{"topology.workers": 3, "topology.max.spout.pending": 1000,
		"topology.debug": true, "topology.component.panic.policy": "kill-worker"}`
	const yamlDoc = "topology.workers: 3\n" +
		"topology.max.spout.pending: 1000\n" +
		"topology.debug: true\n" +
		"topology.component.panic.policy: kill-worker\n"
	decode := map[string]func() (Config, error){
		"encoding/json": func() (Config, error) {
			var c Config
			err := json.Unmarshal([]byte(jsonDoc), &c)
			return c, err
		},
		"encoding/json UseNumber": func() (Config, error) {
			var c Config
			d := json.NewDecoder(strings.NewReader(jsonDoc))
			d.UseNumber()
			err := d.Decode(&c)
			return c, err
		},
		"goccy/go-yaml": func() (Config, error) {
			var c Config
			err := yaml.Unmarshal([]byte(yamlDoc), &c)
			return c, err
		},
	}
	for name, fn := range decode {
		t.Run(name, func(t *testing.T) {
			c, err := fn()
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			e, err := Resolve(nil, c)
			if err != nil {
				t.Fatalf("Resolve: got error %v, want nil", err)
			}
			if got, _ := e.Int(TopologyWorkers); got != 3 {
				t.Errorf("workers: got %d, want 3", got)
			}
			if got, set := e.Int(TopologyMaxSpoutPending); got != 1000 || !set {
				t.Errorf("max spout pending: got %d, %t, want 1000, true", got, set)
			}
			if !e.Bool(TopologyDebug) {
				t.Errorf("debug: got false, want true")
			}
			if got := e.String(TopologyComponentPanicPolicy); got != PanicPolicyKillWorker {
				t.Errorf("panic policy: got %q, want %q", got, PanicPolicyKillWorker)
			}
		})
	}
}

func TestResolveConfigReportsAllErrors(t *testing.T) {
	_, err := Resolve(
		Config{TopologyWorkers: "two", "ui.prot": 1},
		Config{SupervisorSlotsPorts: []any{1}, TopologyMessageTimeoutSecs: 0},
	)
	if err == nil {
		t.Fatal("got nil error, want four")
	}
	want := []string{
		`config: "topology.workers" in gale.yaml must be an integer, got string "two"`,
		`config: unknown key "ui.prot" in gale.yaml (did you mean "ui.port"?)`,
		`config: "supervisor.slots.ports" may not be set in topology config (only topology.* keys may; set it in gale.yaml)`,
		`config: "topology.message.timeout.secs" in topology config must be ≥ 1, got 0`,
	}
	if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, want) {
		t.Errorf("got errors\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, s := range []error{ErrUnknownKey, ErrWrongType, ErrForbiddenOverride, ErrOutOfRange} {
		if !errors.Is(err, s) {
			t.Errorf("errors.Is(err, %v): got false, want true", s)
		}
	}
}

func TestForComponent(t *testing.T) {
	top, err := Resolve(nil, Config{TopologyDebug: true})
	if err != nil {
		t.Fatalf("Resolve: got error %v, want nil", err)
	}

	t.Run("errors name the component", func(t *testing.T) {
		_, err := top.ForComponent("split", Config{
			TopologyWorkers:         2,
			TopologyMaxSpoutPending: 0,
			"topology.debgu":        true,
		})
		want := []string{
			`config: unknown key "topology.debgu" per component "split" (did you mean "topology.debug"?)`,
			`config: "topology.max.spout.pending" per component "split" must be ≥ 1, got 0`,
			`config: "topology.workers" may not be set per component "split" (allowed: topology.component.panic.policy, topology.debug, topology.max.spout.pending, topology.max.spout.pending.autotune, topology.max.spout.pending.autotune.interval.secs, topology.max.task.parallelism, topology.tick.tuple.freq.secs, topology.tuple.reuse; set it in topology config)`,
		}
		if err == nil {
			t.Fatalf("got nil error, want %d", len(want))
		}
		if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, want) {
			t.Errorf("got errors\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})

	t.Run("overlay leaves the topology config alone", func(t *testing.T) {
		c, err := top.ForComponent("count", Config{TopologyDebug: false})
		if err != nil {
			t.Fatalf("got error %v, want nil", err)
		}
		if got := c.Component(); got != "count" {
			t.Errorf("Component: got %q, want %q", got, "count")
		}
		if c.Bool(TopologyDebug) || !top.Bool(TopologyDebug) {
			t.Errorf("debug: got component %t, topology %t, want false, true", c.Bool(TopologyDebug), top.Bool(TopologyDebug))
		}
		if got := top.Source(TopologyDebug); got != LayerTopology {
			t.Errorf("topology Source: got %v, want %v", got, LayerTopology)
		}
	})

	t.Run("twice panics", func(t *testing.T) {
		c, err := top.ForComponent("count", nil)
		if err != nil {
			t.Fatalf("got error %v, want nil", err)
		}
		defer func() {
			if r := recover(); r == nil {
				t.Errorf("ForComponent on a component's config: got no panic, want one")
			}
		}()
		_, _ = c.ForComponent("other", nil)
	})
}

func TestEffectiveEntriesAndMap(t *testing.T) {
	top, err := Resolve(Config{UIPort: 9000}, Config{TopologyWorkers: 2})
	if err != nil {
		t.Fatalf("Resolve: got error %v, want nil", err)
	}
	e, err := top.ForComponent("split", Config{TopologyMaxSpoutPending: 8})
	if err != nil {
		t.Fatalf("ForComponent: got error %v, want nil", err)
	}
	entries := e.Entries()
	if len(entries) != len(configKeySpecs) {
		t.Fatalf("len(Entries): got %d, want %d", len(entries), len(configKeySpecs))
	}
	if !slices.IsSortedFunc(entries, func(a, b Entry) int { return strings.Compare(a.Key, b.Key) }) {
		t.Errorf("Entries: got unsorted keys, want sorted")
	}
	byKey := make(map[string]Entry)
	for _, en := range entries {
		byKey[en.Key] = en
		if en.Doc == "" {
			t.Errorf("%s: got empty Doc, want one line", en.Key)
		}
	}
	tests := []struct {
		key        string
		wantValue  any
		wantSource string
		wantScope  Scope
	}{
		{UIPort, 9000, "gale.yaml", ScopeCluster},
		{TopologyWorkers, 2, "topology", ScopeTopology},
		{TopologyMaxSpoutPending, 8, "component split", ScopeComponent},
		{TopologyAckerExecutors, nil, "default", ScopeTopology},
		{TopologyName, nil, "default", ScopeSystem},
		{NimbusSeeds, []string{"127.0.0.1"}, "default", ScopeCluster},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			en := byKey[tt.key]
			if !reflect.DeepEqual(en.Value, tt.wantValue) {
				t.Errorf("Value: got %#v, want %#v", en.Value, tt.wantValue)
			}
			if got := en.SourceName(); got != tt.wantSource {
				t.Errorf("SourceName: got %q, want %q", got, tt.wantSource)
			}
			if en.Scope != tt.wantScope {
				t.Errorf("Scope: got %v, want %v", en.Scope, tt.wantScope)
			}
		})
	}

	m := e.Map()
	if _, ok := m[TopologyAckerExecutors]; ok {
		t.Errorf("Map: got unset key %s, want it omitted", TopologyAckerExecutors)
	}
	if got := m[TopologyMaxSpoutPending]; got != 8 {
		t.Errorf("Map[%s]: got %v, want 8", TopologyMaxSpoutPending, got)
	}
	m[NimbusSeeds].([]string)[0] = "changed"
	if got := e.Strings(NimbusSeeds)[0]; got != "127.0.0.1" {
		t.Errorf("Map shares slices with the config: got %q after change, want %q", got, "127.0.0.1")
	}
	// The map round-trips: it is a valid gale.yaml, apart from topology.name.
	if err := Validate(m, LayerFile); err != nil {
		t.Errorf("Validate(Map(), LayerFile): got error %v, want nil", err)
	}
}

func TestLoadConfigFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	t.Run("good file", func(t *testing.T) {
		p := write("good.yaml", `# cluster settings
topology.workers: 2
topology.debug: true
supervisor.slots.ports: [6800, 6801]
nimbus.seeds:
  - nimbus-1.example
  - nimbus-2.example
topology.acker.executors: ~
`)
		c, err := LoadFile(p)
		if err != nil {
			t.Fatalf("LoadFile: got error %v, want nil", err)
		}
		e, err := Resolve(c, nil)
		if err != nil {
			t.Fatalf("Resolve: got error %v, want nil", err)
		}
		if got, _ := e.Int(TopologyWorkers); got != 2 {
			t.Errorf("workers: got %d, want 2", got)
		}
		if !e.Bool(TopologyDebug) {
			t.Errorf("debug: got false, want true")
		}
		if got, want := e.Ints(SupervisorSlotsPorts), []int{6800, 6801}; !slices.Equal(got, want) {
			t.Errorf("ports: got %v, want %v", got, want)
		}
		if got, want := e.Strings(NimbusSeeds), []string{"nimbus-1.example", "nimbus-2.example"}; !slices.Equal(got, want) {
			t.Errorf("seeds: got %v, want %v", got, want)
		}
		if _, set := e.Int(TopologyAckerExecutors); set {
			t.Errorf("acker executors: got set, want unset")
		}
		for _, k := range []string{TopologyWorkers, SupervisorSlotsPorts, NimbusSeeds, TopologyAckerExecutors} {
			if got := e.Source(k); got != LayerFile {
				t.Errorf("Source(%s): got %v, want %v", k, got, LayerFile)
			}
		}
	})

	t.Run("empty file", func(t *testing.T) {
		c, err := LoadFile(write("empty.yaml", "# nothing set\n"))
		if err != nil || c == nil || len(c) != 0 {
			t.Errorf("got %v, %v, want an empty Config and nil", c, err)
		}
	})

	t.Run("unknown key is caught by Resolve", func(t *testing.T) {
		c, err := LoadFile(write("typo.yaml", "topology.wrokers: 2\n"))
		if err != nil {
			t.Fatalf("LoadFile: got error %v, want nil", err)
		}
		_, err = Resolve(c, nil)
		want := `config: unknown key "topology.wrokers" in gale.yaml (did you mean "topology.workers"?)`
		if err == nil || err.Error() != want {
			t.Errorf("Resolve: got %v, want %s", err, want)
		}
	})

	t.Run("numbers beyond 64 bits are out of range", func(t *testing.T) {
		c, err := LoadFile(write("big.yaml", `topology.workers: 99999999999999999999
topology.max.spout.pending: -99999999999999999999
ui.port: 0x1_0000_0000_0000_0000
topology.message.timeout.secs: 1.0e+400
supervisor.slots.ports: [6700, 99999999999999999999]
topology.shutdown.drain.timeout.secs: "99999999999999999999"
`))
		if err != nil {
			t.Fatalf("LoadFile: got error %v, want nil", err)
		}
		_, err = Resolve(c, nil)
		for _, want := range []struct {
			is  error
			msg string
		}{
			{ErrOutOfRange, `config: "topology.workers" in gale.yaml is out of range: must be ≥ 1 and ≤ 9223372036854775807, got number 99999999999999999999`},
			{ErrOutOfRange, `config: "topology.max.spout.pending" in gale.yaml is out of range: must be ≥ 1, got number -99999999999999999999`},
			{ErrOutOfRange, `config: "ui.port" in gale.yaml is out of range: must be a port number from 0 to 65535, got number 0x1_0000_0000_0000_0000`},
			{ErrOutOfRange, `config: "topology.message.timeout.secs" in gale.yaml is out of range: must be ≥ 1 and ≤ 9223372036854775807, got number 1.0e+400`},
			{ErrOutOfRange, `config: "supervisor.slots.ports" in gale.yaml must be a list of integers that fit in 64 bits, got number 99999999999999999999 at index 1`},
			// An integer key given a quoted string is of the wrong type.
			{ErrWrongType, `config: "topology.shutdown.drain.timeout.secs" in gale.yaml must be an integer, got string "99999999999999999999"`},
		} {
			if !slices.ContainsFunc(joinedErrors(err), func(e error) bool { return errors.Is(e, want.is) && e.Error() == want.msg }) {
				t.Errorf("Resolve: got %v\nwant among them (%v) %s", err, want.is, want.msg)
			}
		}
	})

	t.Run("numbers that fit", func(t *testing.T) {
		c, err := LoadFile(write("fit.yaml", "topology.workers: 0x10\nui.port: 9223372036854775807\ntopology.message.timeout.secs: 1e3\n"))
		if err != nil {
			t.Fatalf("LoadFile: got error %v, want nil", err)
		}
		_, err = Resolve(c, nil)
		if want := `config: "ui.port" in gale.yaml must be a port number from 0 to 65535, got 9223372036854775807`; err == nil || err.Error() != want {
			t.Fatalf("Resolve: got %v, want %s", err, want)
		}
		delete(c, UIPort)
		e, err := Resolve(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		if w, _ := e.Int(TopologyWorkers); w != 16 {
			t.Errorf("workers: got %d, want 16", w)
		}
		if s, _ := e.Int(TopologyMessageTimeoutSecs); s != 1000 {
			t.Errorf("timeout: got %d, want 1000", s)
		}
	})

	t.Run("string keys keep long digit strings", func(t *testing.T) {
		c, err := LoadFile(write("seeds.yaml", "nimbus.seeds: [99999999999999999999]\n"))
		if err != nil {
			t.Fatalf("LoadFile: got error %v, want nil", err)
		}
		e, err := Resolve(c, nil)
		if err != nil {
			t.Fatalf("Resolve: got error %v, want nil", err)
		}
		if got, want := e.Strings(NimbusSeeds), []string{"99999999999999999999"}; !slices.Equal(got, want) {
			t.Errorf("seeds: got %q, want %q", got, want)
		}
	})

	t.Run("binary file", func(t *testing.T) {
		elf := "\x7fELF\x02\x01\x01\x00\x00\x00\x1b[2J\x1b]0;pwned\x07" + strings.Repeat("\x00", 64) + "topology.workers: 2\n"
		p := write("ls", elf)
		_, err := LoadFile(p)
		want := "config: " + p + ` is not a text file (control character 0x7f at offset 0): a gale.yaml is YAML text, such as "topology.workers: 2"`
		if err == nil || err.Error() != want {
			t.Fatalf("got %v, want %s", err, want)
		}
	})

	t.Run("not UTF-8", func(t *testing.T) {
		_, err := LoadFile(write("latin1.yaml", "nimbus.seeds: [caf\xe9]\n"))
		if err == nil || !strings.Contains(err.Error(), "is not a text file (byte 0xe9 at offset 18 is not UTF-8)") {
			t.Fatalf("got %v, want it to say the file is not text, and where", err)
		}
	})

	t.Run("YAML error on a long line", func(t *testing.T) {
		long := "nimbus.seeds: [a, " + strings.Repeat("ü", 300) + "\n"
		_, err := LoadFile(write("long.yaml", long))
		if err == nil {
			t.Fatal("got nil, want a YAML error")
		}
		msg := err.Error()
		if strings.Count(msg, "ü") > maxExcerpt/2 || !strings.Contains(msg, "…") || strings.Contains(msg, "\n") {
			t.Errorf("error shows %d bytes of the line, want it cut to about %d, on one line: %q", len(msg), maxExcerpt, msg)
		}
		if !strings.HasPrefix(msg, "config: ") || !strings.Contains(msg, "long.yaml:1:") {
			t.Errorf("error %q does not name the file and line", msg)
		}
	})

	errTests := []struct {
		name     string
		path     string
		wantSubs []string
		wantIs   error
	}{
		{"bad YAML", write("bad.yaml", "topology.workers: 2\nnimbus.seeds: [a, b\nui.port: 80\n"),
			[]string{"bad.yaml:3:"}, nil},
		{"wrong indentation", write("indent.yaml", "topology.workers: 2\n  topology.debug: true\n"),
			[]string{"indent.yaml:1:", "mapping value is not allowed", `(line 1: "topology.workers: 2")`}, nil},
		{"duplicate key", write("dup.yaml", "ui.port: 1\nui.port: 2\n"),
			[]string{"dup.yaml:2:", `"ui.port" already defined`, `(line 2: "ui.port: 2")`}, nil},
		{"list at top level", write("list.yaml", "- topology.workers\n"),
			[]string{"list.yaml:1:"}, nil},
		{"missing file", filepath.Join(dir, "missing.yaml"),
			[]string{"config: ", "missing.yaml"}, fs.ErrNotExist},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LoadFile(tt.path)
			if err == nil {
				t.Fatalf("got %v, nil, want an error", c)
			}
			for _, sub := range tt.wantSubs {
				if !strings.Contains(err.Error(), sub) {
					t.Errorf("got error %q, want it to contain %q", err, sub)
				}
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("errors.Is(err, %v): got false, want true", tt.wantIs)
			}
		})
	}
}

// joinedErrors flattens errors.Join, nested too.
func joinedErrors(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, joinedErrors(e)...)
		}
		return out
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

func TestLayerAndScopeStrings(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{LayerDefault.String(), "default"},
		{LayerFile.String(), "gale.yaml"},
		{LayerTopology.String(), "topology"},
		{LayerComponent.String(), "component"},
		{Layer(9).String(), "Layer(9)"},
		{ScopeCluster.String(), "cluster"},
		{ScopeTopology.String(), "topology"},
		{ScopeComponent.String(), "component"},
		{ScopeSystem.String(), "system"},
		{Scope(0).String(), "Scope(0)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

// Config is a configuration layer, as package gale's Config is.
type Config = map[string]any
