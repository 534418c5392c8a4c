package workerproc

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// RunProcess runs this process as one worker from the arguments
// "--spec FILE", with stdin, stdout and stderr as Main describes, and
// returns the exit code: 0 after a clean stop, 1 if the worker failed, 2
// for bad arguments or a bad spec. Test binaries that act as workers call
// it; the gale binary goes through its `worker` subcommand instead.
func RunProcess(name string, args []string) int {
	if len(args) != 2 || args[0] != "--spec" {
		fmt.Fprintf(os.Stderr, "%s: usage: --spec FILE, got %q\n", name, args)
		return 2
	}
	spec, err := ReadSpec(args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: spec.Level()})).With("worker", spec.Worker)
	if err := Main(ctx, spec, Stdin(), os.Stdout, log); err != nil {
		log.Error("worker failed", "err", err)
		return 1
	}
	return 0
}
