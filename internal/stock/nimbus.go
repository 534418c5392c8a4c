package stock

import (
	"errors"
	"github.com/gale-stream/gale/internal/config"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/cli"
	"github.com/gale-stream/gale/internal/devcluster"
	"github.com/gale-stream/gale/internal/nimbus"
)

func newNimbusCmd(opts *cli.Options) *cobra.Command {
	var f struct {
		file, dir, host, etcd, id, advertise string
		port                                 int
	}
	cmd := &cobra.Command{
		Use:   "nimbus --dir DIR [--host HOST] [--port PORT] [--etcd URLS] [--id ID]",
		Short: "Run a nimbus: the cluster's API, scheduler and artifact store",
		Long: `Run a nimbus: it serves the cluster's API (submit, list, kill, ...), and,
while it leads, schedules the topologies onto the supervisors' slots. Its
state is in etcd, and its artifacts under --dir; several nimbuses may run,
one leads (elected through etcd) and the others stand by, each holding a
copy of every artifact.

It binds 127.0.0.1 unless --host says otherwise; bound beyond loopback,
every call but the public reads (list, get, cluster info) needs
nimbus.auth.token (or nimbus.auth.token.file) from --file's gale.yaml as a
bearer token: supervisors and the other nimbuses send it too. nimbus.tls.cert and
nimbus.tls.key turn on TLS. It prints one line on stderr once it serves,
and on SIGTERM or SIGINT it stops taking calls, resigns its leadership and
leaves the cluster.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.dir == "" {
				return cli.Usage(errors.New("--dir is required: the directory of the nimbus's artifacts"))
			}
			var file gale.Config
			if f.file != "" {
				c, err := config.LoadFile(f.file)
				if err != nil {
					return err
				}
				file = c
			}
			eff, err := config.Resolve(file, nil)
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("port") {
				f.port, _ = eff.Int(config.NimbusThriftPort)
			}
			endpoints := eff.Strings(config.GaleEtcdEndpoints)
			if f.etcd != "" {
				endpoints = strings.Split(f.etcd, ",")
			}
			n, err := nimbus.New(nimbus.Config{
				ID:          f.id,
				Dir:         f.dir,
				Listen:      net.JoinHostPort(f.host, strconv.Itoa(f.port)),
				Advertise:   f.advertise,
				Endpoints:   endpoints,
				Cluster:     file,
				GaleVersion: cli.CurrentVersion().Version,
				Logger:      slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)),
			})
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var wg sync.WaitGroup
			done := make(chan error, 1)
			wg.Go(func() { done <- n.Run(ctx) })
			defer wg.Wait()
			select {
			case <-n.Ready():
				devcluster.PrintNimbusReady(cmd.ErrOrStderr(), opts.Name, n.Addr(), n.ID())
			case err := <-done:
				return err
			}
			return <-done
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.file, "file", "", "a gale.yaml with the cluster's settings")
	fl.StringVar(&f.dir, "dir", "", "the nimbus's state `directory` (its artifacts)")
	fl.StringVar(&f.host, "host", "127.0.0.1", "the address to bind")
	fl.IntVar(&f.port, "port", 6627, "the API's port (default nimbus.thrift.port)")
	fl.StringVar(&f.etcd, "etcd", "", "etcd's client `URLs`, comma-separated (default gale.etcd.endpoints)")
	fl.StringVar(&f.id, "id", "", "this nimbus's id (default: the one kept in --dir, made from the host name and a random suffix on the first start)")
	fl.StringVar(&f.advertise, "advertise", "", "the `host:port` others reach this nimbus at (default: the bound address)")
	return cmd
}
