package gale

import (
	goruntime "runtime"

	"github.com/gale-stream/gale/internal/acker"
)

// AckerComponent is the component id of the acker system bolt.
const AckerComponent = "__acker"

// ackerExec runs one acker: it XORs acks into its ledger and tells the
// emitting spout task when a tree completes or fails.
type ackerExec struct {
	rt     *runtime
	idx    int
	ctl    chan *ackBatch
	rctl   chan *ackBatch // from other workers; nil in one process
	out    *outbox
	ledger *acker.Ledger
	tk     Ticker // rotation, every message timeout; made by start
}

func newAckerExec(rt *runtime, idx int) *ackerExec {
	return &ackerExec{rt: rt, idx: idx, ctl: rt.execs[idx].ctl, rctl: rt.execs[idx].rctl, out: newOutbox(rt, true, nil), ledger: acker.New()}
}

func (x *ackerExec) run() {
	defer x.rt.wg.Done()
	tk := x.tk
	defer tk.Stop()
	for n := 0; ; n++ {
		if x.rt.stopping.Load() {
			return
		}
		if n%busyYieldEvery == 0 {
			goruntime.Gosched() // see busyYieldEvery
		}
		// Look before selecting (see boltExec.run); yield a little before
		// parking.
		for spin := 0; spin < x.rt.spins && len(x.ctl) == 0 && len(x.rctl) == 0 && len(tk.C()) == 0; spin++ {
			goruntime.Gosched()
		}
		var in *ackBatch
		switch {
		case len(tk.C()) > 0:
			<-tk.C()
			x.ledger.Rotate()
			tickDone(tk)
		case len(x.rctl) > 0 && (n&1 == 1 || len(x.ctl) == 0):
			in = <-x.rctl
		case len(x.ctl) > 0:
			in = <-x.ctl
		default:
			select {
			case in = <-x.ctl:
			case in = <-x.rctl:
			case <-tk.C():
				x.ledger.Rotate()
				tickDone(tk)
			case <-x.rt.quit:
				return
			}
		}
		if in != nil {
			x.handle(in)
		}
		if !x.out.flush() {
			return
		}
		if in != nil {
			// Released only now, so the in-flight count covers the
			// batch until the completions it caused are sent on: a
			// count of zero between the two told galetest the topology
			// was quiet with a completed tree's news still in the acker,
			// and it moved the clock on until the next rotation.
			x.rt.putAckBatch(in)
		}
	}
}

func (x *ackerExec) handle(b *ackBatch) {
	for i := range b.msgs {
		m := &b.msgs[i]
		switch m.kind {
		case msgInit:
			to := acker.Spout{Task: m.task, Slot: m.slot}
			switch out, reason := x.ledger.Init(m.root, m.val, to); out {
			case acker.Complete:
				x.tell(msgComplete, to, m.root, nil)
			case acker.Failed:
				err, _ := reason.(error)
				x.tell(msgFailed, to, m.root, err)
			}
		case msgAck:
			if out, to := x.ledger.Ack(m.root, m.val); out == acker.Complete {
				x.tell(msgComplete, to, m.root, nil)
			}
		case msgFail:
			if out, to := x.ledger.Fail(m.root, m.reason); out == acker.Failed {
				x.tell(msgFailed, to, m.root, m.reason)
			}
		case msgReset:
			if to, ok := x.ledger.Touch(m.root); ok {
				x.tell(msgReset, to, m.root, nil)
			}
		}
	}
}

func (x *ackerExec) tell(kind uint8, to acker.Spout, root uint64, reason error) {
	x.out.addMsg(x.rt.taskExec[to.Task], ackMsg{kind: kind, task: to.Task, slot: to.Slot, root: root, reason: reason})
}
