package wordcount

import (
	"strings"
	"testing"

	"github.com/gale-stream/gale"
)

func TestBuildParams(t *testing.T) {
	t.Run("defaults and overrides", func(t *testing.T) {
		topo, conf, err := Build(map[string]string{"spouts": "3", "ackers": "2", "rate": "1000"})
		if err != nil {
			t.Fatal(err)
		}
		if c, _ := topo.Def.Component("sentences"); c == nil || c.Parallelism != 3 {
			t.Errorf("sentences: got %+v, want parallelism 3", c)
		}
		if conf[gale.TopologyAckerExecutors] != 2 {
			t.Errorf("ackers: got %v, want 2", conf[gale.TopologyAckerExecutors])
		}
	})
	t.Run("every bad parameter is named", func(t *testing.T) {
		_, _, err := Build(map[string]string{"rate": "-1", "mode": "fast", "splitters": "0", "speed": "9"})
		if err == nil {
			t.Fatal("no error")
		}
		for _, want := range []string{"rate", `"fast"`, "splitters", `unknown parameter "speed"`, "max-spout-pending"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error does not contain %q: %v", want, err)
			}
		}
	})
	t.Run("ack mode needs an acker", func(t *testing.T) {
		if _, _, err := Build(map[string]string{"ackers": "0"}); err == nil || !strings.Contains(err.Error(), "ackers") {
			t.Errorf("got %v, want an error naming ackers", err)
		}
		if _, _, err := Build(map[string]string{"ackers": "0", "mode": "noack"}); err != nil {
			t.Errorf("noack without ackers: %v", err)
		}
	})
}
