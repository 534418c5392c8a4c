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
	"path/filepath"
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

	// The stock gale binary's additions (internal/stock); galecli.Main,
	// hence a user's program, sets neither.

	// Commands make subcommands beyond a user's program's (run, submit,
	// worker and the clients of a cluster): the stock binary's servers
	// (nimbus, supervisor, ui, etcd), dev, demo and bench.
	Commands []func(*Options) *cobra.Command
	// Reserved are topologies that worker processes of this program
	// rebuild by name but that `run` and `submit` do not list, such as
	// the failover bench's: a topology of Topologies may not take one's
	// name.
	Reserved []Reserved
}

// Reserved is a topology of Options.Reserved.
type Reserved struct {
	Topology
	// By names the command that needs it, for the error when a topology
	// of Options.Topologies takes its name: "bench failover".
	By string
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
		RunE:          RunGroup,
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
	root.AddCommand(newVersionCmd(), newConfigCmd(), newRunCmd(opts), newWorkerCmd())
	root.AddCommand(newSubmitCmd(opts), NewListCmd(), newKillCmd(), newActivateCmd(), newDeactivateCmd(), newRebalanceCmd(), newUICmd())
	root.AddCommand(newDoctorCmd(), newMonitorCmd())
	for _, c := range opts.Commands {
		root.AddCommand(c(opts))
	}
	return root
}

// RunGroup is the RunE of a command that only groups subcommands: it shows the help,
// or fails with a usage error when given an unknown subcommand. (Cobra's default prints
// the help and succeeds, even for a typo.)
func RunGroup(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())}
	}
	return cmd.Help()
}

// NoArgs rejects positional arguments with a usage error.
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("%q takes no arguments, got %q", cmd.CommandPath(), args)}
	}
	return nil
}

// Usage marks err as an error in the command line, which exits with code
// 2, for the stock binary's commands (internal/stock).
func Usage(err error) error { return usageError{err} }

// ProgramName is the base name of the program's path arg0, without a
// Windows .exe: the name of the program in its messages.
func ProgramName(arg0 string) string {
	name := strings.TrimSuffix(filepath.Base(arg0), ".exe")
	if name == "" || name == "." || name == string(filepath.Separator) {
		return "gale"
	}
	return name
}
