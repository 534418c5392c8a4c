// Command gale is the Gale command-line tool: it runs and manages topologies and
// benchmarks them. main only wires flags, signals and exit codes; the work lives in
// internal packages.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes.
const (
	exitOK      = 0
	exitRuntime = 1 // the command ran and failed
	exitUsage   = 2 // bad command line: unknown command or flag, invalid value
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal asks the command to wind down (a benchmark still prints its
	// report); restoring the default handling lets a second one kill the process.
	context.AfterFunc(ctx, stop)

	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "gale: %v\n", err)
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		return exitUsage
	}
	return exitRuntime
}

// usageError marks an error in the command line, as opposed to one from running the
// command; it selects exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "gale",
		Short:         "Gale is a distributed, real-time stream processor in the model of Apache Storm",
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
	root.AddCommand(newVersionCmd(), newBenchCmd(), newConfigCmd(), newWorkerCmd())
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
