package proclist

import (
	"bytes"
	"os"
	"strconv"
)

// list reads every process's command line from /proc.
func list() ([]Proc, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []Proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !e.IsDir() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue // exited since ReadDir, or not ours to see
		}
		var args []string
		for a := range bytes.SplitSeq(bytes.TrimRight(b, "\x00"), []byte{0}) {
			args = append(args, string(a))
		}
		if len(b) > 0 {
			out = append(out, Proc{PID: pid, Args: args})
		}
	}
	return out, nil
}
