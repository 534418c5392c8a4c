// Package supervisor is `gale supervisor`: the node agent that runs the
// workers nimbus assigns to this machine's slots.
//
// Its heart is Step, a pure and deterministic reconcile step: the desired
// workers (from the assignments in etcd that name this supervisor), the
// observed ones (launched or adopted from local state), the local
// artifacts and the time give the actions to take: download, launch,
// kill, reassign, activate, deactivate. It classifies every worker as
// the paper does: valid, timed out, not started or disallowed, plus
// starting while within its start grace.
package supervisor
