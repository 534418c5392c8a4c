package devcluster

// The ready lines of the stock binary's servers: the line etcd, nimbus
// and a supervisor print on stderr once they serve, and the parsers of
// those lines that whoever starts them waits on (Cluster, the benches,
// internal/clustertest). Printers and parsers live together so that they
// cannot drift apart.

import (
	"fmt"
	"io"
	"strings"
)

// The markers of the ready lines, after the program's name.
const (
	etcdMarker       = " etcd: serving on "
	nimbusMarker     = " nimbus: serving on "
	supervisorMarker = " supervisor: "
)

// PrintEtcdReady prints etcd's ready line: "gale etcd: serving on URL".
func PrintEtcdReady(w io.Writer, program, url string) {
	fmt.Fprintf(w, "%s%s%s\n", program, etcdMarker, url)
}

// PrintNimbusReady prints nimbus's ready line: "gale nimbus: serving on
// HOST:PORT (id ID)".
func PrintNimbusReady(w io.Writer, program, addr, id string) {
	fmt.Fprintf(w, "%s%s%s (id %s)\n", program, nimbusMarker, addr, id)
}

// PrintSupervisorReady prints a supervisor's ready line: "gale supervisor: ID
// on HOST slots P1,P2".
func PrintSupervisorReady(w io.Writer, program, id, host, slots string) {
	fmt.Fprintf(w, "%s%s%s on %s slots %s\n", program, supervisorMarker, id, host, slots)
}

// EtcdReady accepts etcd's ready line and yields its client URL.
func EtcdReady(line string) (url string, ok bool) { return after(line, etcdMarker) }

// NimbusReady accepts nimbus's ready line and yields its address.
func NimbusReady(line string) (addr string, ok bool) { return after(line, nimbusMarker) }

// NimbusReadyID yields the id of nimbus's ready line, "" without one.
func NimbusReadyID(line string) string {
	_, id, ok := strings.Cut(line, "(id ")
	if !ok {
		return ""
	}
	return strings.TrimSuffix(strings.TrimSpace(id), ")")
}

// SupervisorReady accepts a supervisor's ready line and yields its id.
func SupervisorReady(line string) (id string, ok bool) {
	_, rest, found := strings.Cut(line, supervisorMarker)
	if !found || !strings.Contains(rest, " slots ") {
		return "", false
	}
	id, _, _ = strings.Cut(rest, " ")
	return id, id != ""
}

// after yields the word after marker in line.
func after(line, marker string) (string, bool) {
	i := strings.Index(line, marker)
	if i < 0 {
		return "", false
	}
	w, _, _ := strings.Cut(strings.TrimSpace(line[i+len(marker):]), " ")
	return w, w != ""
}
