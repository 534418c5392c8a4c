package workerproc

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestLaunchGivenAssignment runs the acked word count in two worker
// processes under an executor map the launcher gives, not the even one:
// the spout on worker 1, which runs no acker, and every acker on worker
// 0. The spout emits in worker 1 only, every sentence is acked once with
// no failure, and every word is counted.
func TestLaunchGivenAssignment(t *testing.T) {
	const sentences = 5000
	prog := newProgress()
	raw, _ := json.Marshal(e2eParams{Sentences: sentences, Rate: 20000})
	// Executors in id order: count 0–1, sentences 2, split 3–4 (the even
	// map is 0 1 0 1 0).
	c, err := Launch(LaunchConfig{
		Env:       []string{workerEnv + "=1"},
		Spec:      Spec{Topology: "e2e", Factory: "e2e-wordcount", Params: raw, HeartbeatMS: 50, LogLevel: "warn"},
		N:         2,
		Dir:       t.TempDir(),
		OnMessage: prog.take,
		Executors: []int{0, 1, 1, 0, 1},
	})
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			c.Stop(10 * time.Second)
		}
	}()
	prog.wait(t, "every sentence acked in worker 1", 60*time.Second, func() bool { return prog.get(1).Acked == sentences })
	wantWords := int64(sentences * len(strings.Fields(e2eSentence(0))))
	prog.wait(t, "every word counted", 30*time.Second, func() bool { return prog.get(0).Words+prog.get(1).Words == wantWords })
	w0, w1 := prog.get(0), prog.get(1)
	stopped = true
	if err := c.Stop(10 * time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if w0.Emitted != 0 || w1.Emitted != sentences {
		t.Errorf("emitted %d in worker 0 and %d in worker 1; the map puts the spout on worker 1 only", w0.Emitted, w1.Emitted)
	}
	if w1.Failed != 0 {
		t.Errorf("%d trees failed", w1.Failed)
	}
	if w0.Words == 0 || w1.Words == 0 {
		t.Errorf("words counted per worker %d, %d: the map puts a count task on each", w0.Words, w1.Words)
	}
}

// TestLaunchBadAssignment: a map that does not fit the topology fails
// the launch with the worker's error naming the executor.
func TestLaunchBadAssignment(t *testing.T) {
	raw, _ := json.Marshal(e2eParams{Sentences: 1, Rate: 1})
	c, err := Launch(LaunchConfig{
		Env:       []string{workerEnv + "=1"},
		Spec:      Spec{Topology: "e2e", Factory: "e2e-wordcount", Params: raw, HeartbeatMS: 50, LogLevel: "warn"},
		N:         2,
		Dir:       t.TempDir(),
		Executors: []int{0, 1, 1, 0, 3},
	})
	if err == nil {
		c.Stop(10 * time.Second)
		t.Fatal("Launch started workers with executor 4 on worker 3 of 2")
	}
	if !strings.Contains(err.Error(), "executor 4") {
		t.Errorf("error %q does not name executor 4", err)
	}
}
