package stock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gale-stream/gale/internal/config"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/cli"
	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/coord/etcdembed"
	"github.com/gale-stream/gale/internal/devcluster"
)

// newEtcdCmd is the hidden `etcd`: an embedded single-node etcd in a
// process of its own, which `dev` starts and tests stop and restart.
func newEtcdCmd(opts *cli.Options) *cobra.Command {
	var dir, listen string
	var tls etcdembed.Config
	cmd := &cobra.Command{
		Use:   "etcd --dir DIR [--listen URL] [--cert-file FILE --key-file FILE [--trusted-ca-file FILE --client-cert-auth]]",
		Short: "Run a single-node etcd for a dev cluster (started by dev)",
		Long: `Run an embedded single-node etcd, the coordination store of a dev cluster,
with its data under --dir (kept across restarts in the same --dir). Once it
serves, it prints "etcd: serving on URL" on stderr; SIGINT or SIGTERM stops
it. --cert-file and --key-file serve TLS (--listen https://...), and
--client-cert-auth with --trusted-ca-file refuses every client without a
certificate of that CA, as etcd's flags of the same names do.`,
		Hidden: true,
		Args:   cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return cli.Usage(errors.New("--dir is required: the directory etcd keeps its data in"))
			}
			tls.Dir, tls.ClientURL = dir, listen
			if tls.ClientCertAuth && tls.TrustedCAFile == "" {
				return cli.Usage(errors.New("--client-cert-auth needs --trusted-ca-file: the CA whose client certificates etcd accepts"))
			}
			e, err := etcdembed.Start(tls)
			if err != nil {
				return err
			}
			defer e.Close()
			devcluster.PrintEtcdReady(cmd.ErrOrStderr(), opts.Name, e.Endpoints[0])
			<-cmd.Context().Done()
			return nil
		},
	}
	cmd.AddCommand(newEtcdStatusCmd())
	cmd.Flags().StringVar(&dir, "dir", "", "the `directory` of etcd's data")
	cmd.Flags().StringVar(&listen, "listen", "http://127.0.0.1:2379", "the client `URL` to serve on (port 0 picks a free one)")
	cmd.Flags().StringVar(&tls.CertFile, "cert-file", "", "the PEM server certificate `FILE` to serve TLS with")
	cmd.Flags().StringVar(&tls.KeyFile, "key-file", "", "the PEM `FILE` of --cert-file's key")
	cmd.Flags().StringVar(&tls.TrustedCAFile, "trusted-ca-file", "", "the PEM CA `FILE` whose client certificates --client-cert-auth accepts")
	cmd.Flags().BoolVar(&tls.ClientCertAuth, "client-cert-auth", false, "refuse every client without a certificate of --trusted-ca-file")
	return cmd
}

// newEtcdStatusCmd is `etcd status`: etcd's raft index and revision, the
// two numbers that show whether anything wrote to etcd between two
// calls (the cluster's steady state must not).
func newEtcdStatusCmd() *cobra.Command {
	var endpoints, file string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [--etcd URL] [--file gale.yaml] [--json]",
		Short: "Print etcd's raft index and revision",
		Long: `Print the raft index and the store revision of the etcd member at --etcd.
The raft index moves on every write through raft (puts, deletes, lease
grants, revocations and expiries), not on lease keep-alives or reads; the
revision moves on every change of a key. Run it twice: a cluster in its
steady state moves neither.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sec, fileEndpoints, err := etcdSecurity(file)
			if err != nil {
				return err
			}
			eps := strings.Split(endpoints, ",")
			if file != "" && !cmd.Flags().Changed("etcd") {
				eps = fileEndpoints
			}
			c, err := coord.DialSecure(eps, sec)
			if err != nil {
				return err
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			idx, rev, err := coord.Status(ctx, c)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]any{"endpoint": c.Endpoints()[0], "raft_index": idx, "revision": rev})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "etcd %s: raft index %d, revision %d\n", c.Endpoints()[0], idx, rev)
			return nil
		},
	}
	cmd.Flags().StringVar(&endpoints, "etcd", "http://127.0.0.1:2379", "etcd's client `URLs`, comma-separated (default with --file: its gale.etcd.endpoints)")
	cmd.Flags().StringVar(&file, "file", "", "a gale.yaml whose gale.etcd.tls.* and gale.etcd.username settings reach a secured etcd")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document")
	return cmd
}

// etcdSecurity is how the commands that dial etcd themselves reach a
// secured one: the gale.etcd.* settings of the gale.yaml at file ("" for
// none: an open etcd), and its gale.etcd.endpoints.
func etcdSecurity(file string) (coord.Security, []string, error) {
	var c gale.Config
	if file != "" {
		var err error
		if c, err = config.LoadFile(file); err != nil {
			return coord.Security{}, nil, err
		}
	}
	eff, err := config.Resolve(c, nil)
	if err != nil {
		return coord.Security{}, nil, err
	}
	sec, err := coord.SecurityFromConfig(eff)
	return sec, eff.Strings(config.GaleEtcdEndpoints), err
}
