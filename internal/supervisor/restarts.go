package supervisor

import "strings"

// slotRestarts is what a slot's report says of its restarts: the
// topology of the worker last launched there, how often a worker of that
// topology was started there again after one failed, and whether the
// last one failed (it exited by itself, or was killed for a missed
// heartbeat or a start that never came), so that its next launch is a
// restart. A worker stopped because its assignment changed has not
// failed: the one launched after it is no restart.
type slotRestarts struct {
	topology string
	restarts int
	failed   bool
}

// launched counts a launch of topology's worker on port.
func (s *Supervisor) launched(port int, topology string) {
	r := s.restarts[port]
	switch {
	case r == nil || r.topology != topology:
		s.restarts[port] = &slotRestarts{topology: topology}
	case r.failed:
		r.restarts++
		r.failed = false
	}
}

// exited notes that p's process ended, and whether it failed.
func (s *Supervisor) exited(p *proc) {
	r := s.restarts[p.Port]
	if r == nil || r.topology != p.Running.Topology {
		return
	}
	if !p.Stopping || strings.HasPrefix(p.StopWhy, string(TimedOut)+":") || strings.HasPrefix(p.StopWhy, string(NotStarted)+":") {
		r.failed = true
	}
}

// restartsOf is how often topology's worker on port was restarted.
func (s *Supervisor) restartsOf(port int, topology string) int {
	if r := s.restarts[port]; r != nil && r.topology == topology {
		return r.restarts
	}
	return 0
}
