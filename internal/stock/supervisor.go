package stock

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/gale-stream/gale/internal/config"
	"log/slog"
	"maps"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/cli"
	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/devcluster"
	"github.com/gale-stream/gale/internal/supervisor"
)

func newSupervisorCmd(opts *cli.Options) *cobra.Command {
	var f struct{ file, dir, host, ports, etcd, id, logLevel string }
	cmd := &cobra.Command{
		Use:   "supervisor --dir DIR [--host HOST] [--ports P1,P2,…] [--etcd URLS] [--id ID]",
		Short: "Run a supervisor: the node agent that runs the workers nimbus assigns to this machine",
		Long: `Run a supervisor: it joins the cluster through an etcd lease, offers its
slots (supervisor.slots.ports, or --ports), and runs the workers that nimbus
assigns to them. It downloads each topology's artifact from the nimbus
leader, checks its size and SHA-256, refuses one built for another
platform, and starts "ARTIFACT worker" for each slot. It restarts a worker
that crashes, hangs (no heartbeat for supervisor.worker.timeout.secs) or
does not start (supervisor.worker.start.timeout.secs), once it has read the
assignments from etcd again (cut off from etcd, it may hold an assignment
nimbus has moved), and stops one whose assignment is withdrawn. It
reports its workers to the nimbus leader every
supervisor.heartbeat.frequency.secs; nothing of that goes to etcd.

Its state lives under --dir: its id (kept from the first start; a restart
in the same directory is the same supervisor), the artifacts, each slot's
spec and worker.log, and state.json, the workers it runs.

Stopping a supervisor (SIGTERM, SIGINT, even kill -9) does not stop its
workers, as in Storm: they keep running, and a supervisor started again in
the same --dir adopts them without restarting them. A stop does not revoke
its etcd lease: nimbus keeps the workers assigned here for
nimbus.supervisor.timeout.secs, so a restart within that time (systemctl
restart) moves nothing; past it, nimbus moves them to other supervisors.
To take a machine out of the cluster, drain it first: "supervisor drain
--dir DIR" has nimbus move its workers at once, then the supervisor stays
idle, out of the cluster, until stopped.

It prints one line on stderr once it has joined the cluster. "supervisor
status --dir DIR" shows its workers, from the supervisor itself.

--host is the address its workers listen on and that their peers on other
machines dial: this machine's IP or hostname (127.0.0.1 for a cluster on one
machine), not a wildcard such as 0.0.0.0.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.dir == "" {
				return cli.Usage(errors.New("--dir is required: the supervisor's state directory"))
			}
			if err := supervisor.CheckHost(f.host); err != nil {
				return cli.Usage(err)
			}
			var file gale.Config
			if f.file != "" {
				c, err := config.LoadFile(f.file)
				if err != nil {
					return err
				}
				file = c
			}
			// Nimbus's scheduler key, which a shared gale.yaml may hold,
			// is no concern of the supervisor or its workers.
			file = maps.Clone(file)
			delete(file, "isolation.scheduler.machines")
			eff, err := config.Resolve(file, nil)
			if err != nil {
				return err
			}
			ports := eff.Ints(config.SupervisorSlotsPorts)
			if f.ports != "" {
				ports = nil
				for _, p := range strings.Split(f.ports, ",") {
					n, err := strconv.Atoi(strings.TrimSpace(p))
					if err != nil {
						return cli.Usage(fmt.Errorf("--ports %q: %q is not a port number", f.ports, p))
					}
					ports = append(ports, n)
				}
			}
			endpoints := eff.Strings(config.GaleEtcdEndpoints)
			if f.etcd != "" {
				endpoints = strings.Split(f.etcd, ",")
			}
			id, err := supervisor.LoadID(f.dir, f.id, f.host)
			if err != nil {
				return err
			}
			var level slog.Level
			if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
				return cli.Usage(fmt.Errorf("--log-level %q: want debug, info, warn or error", f.logLevel))
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			sec, err := coord.SecurityFromConfig(eff)
			if err != nil {
				return err
			}
			client, err := coord.DialSecure(endpoints, sec)
			if err != nil {
				return err
			}
			defer client.Close()
			store := coord.NewStore(client)
			defer store.Close()
			dial, err := nimbusDialOptions(eff)
			if err != nil {
				return err
			}
			cfg := supervisor.Config{ID: id, Dir: f.dir, Host: f.host, Ports: ports, Store: store, Cluster: file,
				GaleVersion: cli.CurrentVersion().Version, WorkerLogLevel: f.logLevel, Logger: log, DialOptions: dial}
			cfg.FromCluster(eff)
			s, err := supervisor.New(cfg)
			if err != nil {
				return err
			}
			return runSupervisor(cmd.Context(), s, func() {
				devcluster.PrintSupervisorReady(cmd.ErrOrStderr(), opts.Name, id, f.host, devcluster.JoinInts(ports, ","))
			})
		},
	}
	cmd.AddCommand(newSupervisorStatusCmd(), newSupervisorDrainCmd())
	fl := cmd.Flags()
	fl.StringVar(&f.file, "file", "", "a gale.yaml with the cluster's settings")
	fl.StringVar(&f.dir, "dir", "", "the supervisor's state `directory`")
	fl.StringVar(&f.host, "host", "127.0.0.1", "the address its workers listen on and their peers reach them at: this machine's IP or hostname, not 0.0.0.0")
	fl.StringVar(&f.ports, "ports", "", "the slots, comma-separated `ports` (default supervisor.slots.ports)")
	fl.StringVar(&f.etcd, "etcd", "", "etcd's client `URLs`, comma-separated (default gale.etcd.endpoints)")
	fl.StringVar(&f.id, "id", "", "this supervisor's id on its first start (default: the host and a random suffix)")
	fl.StringVar(&f.logLevel, "log-level", "info", "the least level logged: debug, info, warn or error")
	return cmd
}

// runSupervisor runs s until ctx is done, calling ready once it has
// joined the cluster.
func runSupervisor(ctx context.Context, s *supervisor.Supervisor, ready func()) error {
	var wg sync.WaitGroup
	done := make(chan error, 1)
	wg.Go(func() { done <- s.Run(ctx) })
	defer wg.Wait()
	select {
	case <-s.Ready():
		ready()
	case err := <-done:
		return err
	}
	return <-done
}

// nimbusDialOptions are how a supervisor dials nimbus: TLS trusting
// nimbus.tls.cert (the cluster's certificate, or the CA that signed each
// nimbus's) when it is set, else plaintext (nil).
func nimbusDialOptions(eff *config.Effective) ([]grpc.DialOption, error) {
	cert := eff.String(config.NimbusTLSCert)
	if cert == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(cert)
	if err != nil {
		return nil, fmt.Errorf("nimbus.tls.cert: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("nimbus.tls.cert %s holds no PEM certificate", cert)
	}
	return []grpc.DialOption{grpc.WithTransportCredentials(
		credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))}, nil
}
