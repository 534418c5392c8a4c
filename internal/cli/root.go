// Package cli is the Gale command line: the subcommands of the stock gale
// binary and of every Go program that hands its topologies to
// galecli.Main. Run parses the arguments, wires signals and returns the
// exit code; the caller (cmd/gale, a user's main) exits with it.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes.
const (
	exitOK      = 0
	exitRuntime = 1 // the command ran and failed
	exitUsage   = 2 // bad command line: unknown command or flag, invalid value
)

// Options describe a command line.
type Options struct {
	// Name is the program's name in usage lines and messages; empty means
	// "gale".
	Name string
	// Topologies are the topologies `run NAME` runs and worker processes
	// of this program rebuild by name.
	Topologies []Topology
}

// Run runs the command line args (without the program name), writing to
// stdout and stderr, and returns the exit code: 0 on success, 1 when the
// command ran and failed, 2 for a bad command line. The first SIGINT or
// SIGTERM asks the command to wind down (a run drains and still reports);
// a second one kills the process.
func Run(args []string, stdout, stderr io.Writer, opts Options) int {
	if opts.Name == "" {
		opts.Name = "gale"
	}
	if err := opts.register(); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", opts.Name, err)
		return exitRuntime
	}
	ctx, stop := notifyOnce(os.Interrupt, syscall.SIGTERM)
	defer stop()

	root := newRootCmd(&opts)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "%s: %v\n", opts.Name, err)
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		return exitUsage
	}
	return exitRuntime
}

// notifyOnce returns a context that the first of sigs cancels. The
// first signal asks the command to wind down (a benchmark or a run still
// prints its report); the default handling is back by the time the
// context is done, so a second signal kills the process. stop releases
// the signals and waits for the goroutine watching them.
func notifyOnce(sigs ...os.Signal) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-ch:
		case <-done:
		}
		signal.Stop(ch)
		cancel()
	})
	return ctx, func() {
		close(done)
		wg.Wait()
	}
}

// usageError marks an error in the command line, as opposed to one from running the
// command; it selects exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func newRootCmd(opts *Options) *cobra.Command {
	short := "Gale is a distributed, real-time stream processor in the model of Apache Storm"
	if opts.Name != "gale" {
		short = opts.Name + " is a Gale command line that knows its own topologies (`" + opts.Name + " run --help` lists them)"
	}
	root := &cobra.Command{
		Use:           opts.Name,
		Short:         short,
		SilenceErrors: true, // run prints the error once, and picks the exit code
		SilenceUsage:  true,
		Args:          cobra.ArbitraryArgs,
		RunE:          runGroup,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.CompletionOptions.HiddenDefaultCmd = true
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		RunE: func(_ *cobra.Command, args []string) error {
			cmd, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 {
				return usageError{fmt.Errorf("unknown help topic %q", strings.Join(args, " "))}
			}
			return cmd.Help()
		},
	})
	root.AddCommand(newVersionCmd(), newBenchCmd(), newConfigCmd(), newRunCmd(opts), newWorkerCmd())
	root.AddCommand(newNimbusCmd(opts))
	root.AddCommand(newSubmitCmd(opts), newListCmd(), newKillCmd(), newActivateCmd(), newDeactivateCmd(), newRebalanceCmd(), newEtcdCmd(opts), newDevCmd(opts), newDemoCmd(opts), newUICmd())
	root.AddCommand(newSupervisorCmd(opts))
	root.AddCommand(newDoctorCmd(), newMonitorCmd())
	return root
}

// runGroup is the RunE of a command that only groups subcommands: it shows the help,
// or fails with a usage error when given an unknown subcommand. (Cobra's default prints
// the help and succeeds, even for a typo.)
func runGroup(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())}
	}
	return cmd.Help()
}

// noArgs rejects positional arguments with a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("%q takes no arguments, got %q", cmd.CommandPath(), args)}
	}
	return nil
}
