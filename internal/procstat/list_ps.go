//go:build unix && !linux

package procstat

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// list asks ps for every process's command line.
func list() ([]Process, error) {
	out, err := exec.Command("ps", "-axww", "-o", "pid=,command=").Output()
	if err != nil {
		return nil, fmt.Errorf("list processes: ps: %w", err)
	}
	var procs []Process
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		pid, cmd, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil {
			continue
		}
		procs = append(procs, Process{PID: n, Args: []string{strings.TrimSpace(cmd)}})
	}
	return procs, sc.Err()
}
