package supervisor

import (
	"reflect"
	"testing"

	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/worker"
)

// TestDesiredFor: each slot of an assignment that names the supervisor
// is a desired worker with its index, every worker's address, and the
// assignment's executors, parallelism, secret and version; other
// supervisors' slots are not.
func TestDesiredFor(t *testing.T) {
	art := coord.Artifact{SHA256: "ab", Size: 3, GOOS: "linux", GOARCH: "amd64", WireVersion: 2}
	as := []coord.Assignment{{
		Topology: "t1", Name: "wc", Version: 4, Active: true, Artifact: art, Factory: "wordcount",
		Params: map[string]string{"n": "1"}, Config: map[string]any{"topology.debug": true}, Secret: "s",
		Executors: []int{0, 1, 2}, Parallelism: map[string]int{"split": 2},
		Workers: []coord.Slot{{Supervisor: "a", Host: "10.0.0.1", Port: 6700}, {Supervisor: "b", Host: "10.0.0.2", Port: 6700},
			{Supervisor: "a", Host: "10.0.0.1", Port: 6701}},
	}, {
		Topology: "t2", Name: "other", Version: 1, Workers: []coord.Slot{{Supervisor: "b", Host: "10.0.0.2", Port: 6701}},
	}}
	got := DesiredFor("a", as)
	addrs := []string{"10.0.0.1:6700", "10.0.0.2:6700", "10.0.0.1:6701"}
	mk := func(port, idx int) Desired {
		return Desired{Port: port, Topology: "t1", Name: "wc", Version: 4, Active: true,
			Artifact: Artifact{SHA256: "ab", Size: 3, GOOS: "linux", GOARCH: "amd64", WireVersion: 2},
			Factory:  "wordcount", Params: map[string]string{"n": "1"}, Config: map[string]any{"topology.debug": true},
			Assignment: worker.Assignment{Worker: idx, Workers: addrs, Executors: []int{0, 1, 2},
				Parallelism: map[string]int{"split": 2}, Secret: "s", Version: 4}}
	}
	want := []Desired{mk(6700, 0), mk(6701, 2)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	if got := DesiredFor("c", as); len(got) != 0 {
		t.Errorf("supervisor c: got %+v, want nothing", got)
	}
}
