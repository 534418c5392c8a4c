package stock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/cli"
	"github.com/gale-stream/gale/internal/devcluster"
)

// devFlags are the flags of `dev` (and `demo`).
type devFlags struct {
	dir  string
	file string // a gale.yaml for nimbus and the supervisors
	// defaults are settings for the cluster where the gale.yaml of file
	// has none (demo's report frequency).
	defaults     gale.Config
	nimbuses     int  // 0: one
	nimbusesFlag bool // dev has --nimbuses (demo, one nimbus, has not)
	supervisors  int
	etcdPort     int
	nimbusPort   int
	slotsPer     int
	slotBase     int
	uiPort       int // 0: no UI
	asJSON       bool
}

// bind binds the flags; withJSON adds --json.
func (f *devFlags) bind(cmd *cobra.Command, withJSON bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.file, "file", "", "the cluster's gale.yaml `FILE`, for nimbus and every supervisor")
	fl.StringVar(&f.dir, "dir", "", "the `directory` to keep the cluster's state in, kept on exit (default: a temporary directory, removed on exit)")
	fl.IntVar(&f.supervisors, "supervisors", 2, "supervisor processes")
	fl.IntVar(&f.etcdPort, "etcd-port", 2379, "etcd's client port")
	fl.IntVar(&f.nimbusPort, "nimbus-port", 6627, "nimbus's API port")
	fl.IntVar(&f.slotsPer, "slots-per", 4, "worker slots of each supervisor")
	fl.IntVar(&f.slotBase, "slot-base", 6700, "the first slot's port: supervisor i has slot-base+i*slots-per and the next slots-per-1")
	fl.IntVar(&f.uiPort, "ui-port", 8080, "the port of the web UI (/), the REST API (/api/v1) and /metrics on 127.0.0.1; 0 for none")
	if withJSON {
		fl.BoolVar(&f.asJSON, "json", false, "print the cluster's addresses and pids as one JSON document")
	}
}

func (f *devFlags) check() error {
	var errs []error
	if f.supervisors < 0 {
		errs = append(errs, fmt.Errorf("--supervisors must be ≥ 0, got %d", f.supervisors))
	}
	if f.nimbuses < 1 && f.nimbusesFlag {
		errs = append(errs, fmt.Errorf("--nimbuses must be ≥ 1, got %d", f.nimbuses))
	} else if last := f.nimbusPort + f.nimbuses - 1; f.nimbusPort != 0 && f.nimbusPort <= 65535 && last > 65535 {
		errs = append(errs, fmt.Errorf("--nimbus-port %d with %d nimbuses needs ports %d to %d: keep them within 1 to 65535",
			f.nimbusPort, f.nimbuses, f.nimbusPort, last))
	}
	if f.slotsPer < 1 {
		errs = append(errs, fmt.Errorf("--slots-per must be ≥ 1, got %d", f.slotsPer))
	}
	for _, p := range []struct {
		flag string
		port int
	}{{"--etcd-port", f.etcdPort}, {"--nimbus-port", f.nimbusPort}, {"--ui-port", f.uiPort}} {
		if p.port < 0 || p.port > 65535 {
			errs = append(errs, fmt.Errorf("%s must be a port from 0 to 65535, got %d", p.flag, p.port))
		}
	}
	if last := f.slotBase + f.supervisors*f.slotsPer - 1; f.slotBase < 1 || last > 65535 {
		errs = append(errs, fmt.Errorf("--slot-base %d with %d supervisors of %d slots needs ports %d to %d: keep them within 1 to 65535",
			f.slotBase, f.supervisors, f.slotsPer, f.slotBase, last))
	}
	return errors.Join(errs...)
}

func newDevCmd(opts *cli.Options) *cobra.Command {
	f := devFlags{nimbuses: 1, nimbusesFlag: true}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a whole cluster on this machine: etcd, nimbus and supervisors, until Ctrl-C",
		Long: `Run a cluster on 127.0.0.1 as child processes of this program: an embedded
single-node etcd, --nimbuses nimbuses (one leads, the others stand by; nimbus
i serves on --nimbus-port+i) and --supervisors supervisors, each with
--slots-per worker slots. Once all are ready it prints their addresses and
pids (--json: one JSON document) and runs until Ctrl-C (SIGINT or SIGTERM),
then stops the supervisors, the workers they started, nimbus and etcd, in
that order. A second Ctrl-C kills them at once. If one of them dies, dev
says which, stops the rest and exits 1.

The cluster's state is kept under --dir (default: a temporary directory,
removed on exit). Topologies are submitted to it with "submit" (nimbus.seeds'
default, 127.0.0.1, with the default --nimbus-port, names this nimbus).

With a --file whose gale.yaml sets gale.etcd.tls.ca, .cert and .key, etcd
serves TLS with that certificate (it must serve 127.0.0.1 too) and accepts
only clients of that CA; with gale.etcd.username and a password, dev turns
etcd's auth on for that user. Nimbus and the supervisors read the same keys.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return cli.Usage(err)
			}
			hurry, stopSignals := hurrySignal()
			defer stopSignals()
			d, err := startDev(cmd.Context(), opts, f, cmd.ErrOrStderr(), hurry)
			if err != nil {
				return err
			}
			if err := d.Print(cmd.OutOrStdout(), f.asJSON, true); err != nil {
				return errors.Join(err, d.Stop())
			}
			return d.Wait(cmd.Context())
		},
	}
	f.bind(cmd, true)
	cmd.Flags().IntVar(&f.nimbuses, "nimbuses", f.nimbuses, "nimbus processes: one leads, the others stand by (nimbus i serves on --nimbus-port+i)")
	return cmd
}

// hurrySignal is closed on the second SIGINT or SIGTERM: the first asks
// the cluster to stop in order (Run's context), the second to kill its
// processes at once. Listening for them here keeps the default action,
// which would kill dev and leave its children running, from happening.
func hurrySignal() (<-chan struct{}, func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	hurry := make(chan struct{})
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(hurry)
		for n := 0; n < 2; n++ {
			select {
			case <-ch:
			case <-done:
				return
			}
		}
	})
	return hurry, func() {
		signal.Stop(ch)
		close(done)
		wg.Wait()
	}
}

// startDev starts the cluster f describes, its output and messages going
// to stderr; hurry, closed, has its stop kill at once.
func startDev(ctx context.Context, opts *cli.Options, f devFlags, stderr io.Writer, hurry <-chan struct{}) (*devcluster.Cluster, error) {
	return devcluster.Start(ctx, devcluster.Config{
		Name: opts.Name, Dir: f.dir, File: f.file, Defaults: f.defaults,
		Nimbuses: f.nimbuses, Supervisors: f.supervisors,
		EtcdPort: f.etcdPort, NimbusPort: f.nimbusPort,
		SlotsPer: f.slotsPer, SlotBase: f.slotBase, UIPort: f.uiPort,
		Log: stderr, Hurry: hurry,
	})
}
