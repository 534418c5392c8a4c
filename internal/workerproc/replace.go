package workerproc

// Replace makes f available to worker processes of this binary under
// name, as Register does, replacing any factory registered under name
// before. The command line registers the topologies it was given each
// time it runs (internal/cli), which tests do many times in one process.
func Replace(name string, f Factory) {
	regMu.Lock()
	defer regMu.Unlock()
	registry[name] = f
}
