package cli

import (
	"context"
	"errors"
	"log/slog"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gale-stream/gale/internal/workerproc"
)

// newWorkerCmd is the hidden `gale worker`: one worker process of a
// topology, started by a launcher (gale bench --workers, gale run
// --workers, later the supervisor) that talks to it over stdin and stdout
// (internal/workerproc). It builds the bench's topology or, by name, one
// of the program's own (Options.Topologies).
func newWorkerCmd() *cobra.Command {
	var specPath string
	cmd := &cobra.Command{
		Use:    "worker --spec FILE",
		Short:  "Run one worker process of a topology (started by a launcher)",
		Hidden: true,
		Args:   NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if specPath == "" {
				return usageError{errNoSpec}
			}
			spec, err := workerproc.ReadSpec(specPath)
			if err != nil {
				return usageError{err}
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: spec.Level()})).
				With("worker", spec.Worker)
			// SIGTERM stops a worker; SIGINT does not. A Ctrl-C at a
			// terminal reaches the launcher and its workers alike, and
			// the launcher stops the topology in order: spouts
			// deactivated and trees drained everywhere before any worker
			// stops. (The command line's own handler takes the first
			// SIGINT; a second one kills the worker with the launcher.)
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
			defer stop()
			return workerproc.Main(ctx, spec, workerproc.Stdin(), cmd.OutOrStdout(), log)
		},
	}
	cmd.Flags().StringVar(&specPath, "spec", "", "the worker's spec, a JSON `file` written by its launcher")
	return cmd
}

var errNoSpec = errors.New("--spec is required")
