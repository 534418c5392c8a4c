package stock

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gale-stream/gale/internal/cli/clitest"
)

// TestBenchKafkaJSON runs the three experiments for real, small, with
// the broker a child process of this binary as gale: each mode reads
// every id, none lost or duplicated, and --json prints the documented
// document. The ratios are logged, not asserted: they depend on how busy
// the machine is.
func TestBenchKafkaJSON(t *testing.T) {
	t.Setenv(clitest.MainEnv, "1") // the broker is this binary, as gale
	const n = 20000
	code, stdout, _ := runGale(t, "bench", "kafka", "--messages", "20000", "--partitions", "3", "--json")
	var r struct {
		Messages       int      `json:"messages"`
		Partitions     int      `json:"partitions"`
		ProduceSeconds *float64 `json:"produce_seconds"`
		Runs           []struct {
			Mode             string   `json:"mode"`
			Messages         int      `json:"messages"`
			Seconds          float64  `json:"seconds"`
			PerSec           float64  `json:"messages_per_sec"`
			CPUSeconds       *float64 `json:"cpu_seconds"`
			CPUPerMessage    *float64 `json:"cpu_us_per_message"`
			BrokerCPUSeconds *float64 `json:"broker_cpu_seconds"`
			Lost             *int64   `json:"lost"`
			Duplicates       *int64   `json:"duplicates"`
			Error            string   `json:"error"`
		} `json:"runs"`
		NoAckVsPlain *float64 `json:"noack_vs_plain_cpu"`
		AckVsNoAck   *float64 `json:"ack_vs_noack_cpu"`
		Error        string   `json:"error"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, stdout)
	}
	if code != exitOK || r.Error != "" {
		t.Fatalf("exit %d, error %q: want 0 and none\n%s", code, r.Error, stdout)
	}
	if r.Messages != n || r.Partitions != 3 || r.ProduceSeconds == nil {
		t.Errorf("messages %d, partitions %d, produce_seconds %v: want %d, 3, present", r.Messages, r.Partitions, r.ProduceSeconds, n)
	}
	var modes []string
	for _, run := range r.Runs {
		modes = append(modes, run.Mode)
		if run.Messages != n || run.Seconds <= 0 || run.PerSec <= 0 || run.CPUSeconds == nil || run.CPUPerMessage == nil ||
			run.BrokerCPUSeconds == nil || run.Error != "" {
			t.Errorf("mode %s: %+v; want %d messages, seconds and messages_per_sec > 0, the CPU fields present, no error", run.Mode, run, n)
		}
		if run.Lost == nil || *run.Lost != 0 || run.Duplicates == nil || *run.Duplicates != 0 {
			t.Errorf("mode %s: lost %v, duplicates %v; want 0 and 0 (nothing fails in this run)", run.Mode, run.Lost, run.Duplicates)
		}
	}
	if got := strings.Join(modes, ","); got != "plain,noack,ack" {
		t.Errorf("modes %s, want plain,noack,ack", got)
	}
	if r.NoAckVsPlain == nil || r.AckVsNoAck == nil {
		t.Fatalf("ratios %v, %v: want both", r.NoAckVsPlain, r.AckVsNoAck)
	}
	t.Logf("CPU per message: noack/plain %.2f, ack/noack %.2f", *r.NoAckVsPlain, *r.AckVsNoAck)
}

// TestBenchKafkaFlags: bad flags are usage errors naming the flag.
func TestBenchKafkaFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--mode", "fast"}, `--mode must be "plain", "noack", "ack" or "kill"`},
		{[]string{"--messages", "0"}, "--messages must be ≥ 1, got 0"},
		{[]string{"--partitions", "-1"}, "--partitions must be ≥ 1, got -1"},
	} {
		code, _, stderr := runGale(t, append([]string{"bench", "kafka"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, exitUsage, tc.want)
		}
	}
}

// TestBenchKafkaKill runs the kill mode for real, small: a worker process
// is killed and started again, no id is lost, and the report holds the
// duplicates and their bound (logged, not asserted against each other:
// the bound's rate term depends on how busy the machine is).
func TestBenchKafkaKill(t *testing.T) {
	t.Setenv(clitest.MainEnv, "1") // the broker and the workers are this binary, as gale
	code, stdout, stderr := runGale(t, "bench", "kafka", "--mode", "kill", "--messages", "20000", "--json")
	var r struct {
		Runs []struct {
			Mode       string `json:"mode"`
			Lost       int64  `json:"lost"`
			Duplicates int64  `json:"duplicates"`
			Error      string `json:"error"`
		} `json:"runs"`
		Kill *struct {
			InFlight int64 `json:"in_flight"`
			Bound    int64 `json:"bound"`
			Restarts int   `json:"restarts"`
		} `json:"kill"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s\nstderr: %s", err, stdout, stderr)
	}
	if code != exitOK || r.Error != "" || len(r.Runs) != 1 || r.Runs[0].Mode != "kill" || r.Runs[0].Lost != 0 {
		t.Fatalf("exit %d, error %q, runs %+v: want 0, none, one kill run losing nothing\nstderr: %s", code, r.Error, r.Runs, stderr)
	}
	if k := r.Kill; k == nil || k.InFlight != 1000 || k.Bound < k.InFlight || k.Restarts != 1 {
		t.Fatalf("kill %+v: want in_flight 1000, bound ≥ it, 1 restart", k)
	}
	t.Logf("%d duplicates, bound %d", r.Runs[0].Duplicates, r.Kill.Bound)
}
