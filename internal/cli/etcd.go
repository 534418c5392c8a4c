package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gale-stream/gale/internal/coord"
)

// newEtcdCmd is the hidden `etcd`: an embedded single-node etcd in a
// process of its own, which `dev` starts and tests stop and restart.
func newEtcdCmd(opts *Options) *cobra.Command {
	var dir, listen string
	cmd := &cobra.Command{
		Use:   "etcd --dir DIR [--listen URL]",
		Short: "Run a single-node etcd for a dev cluster (started by dev)",
		Long: `Run an embedded single-node etcd, the coordination store of a dev cluster,
with its data under --dir (kept across restarts in the same --dir). Once it
serves, it prints "etcd: serving on URL" on stderr; SIGINT or SIGTERM stops
it.`,
		Hidden: true,
		Args:   noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return usageError{errors.New("--dir is required: the directory etcd keeps its data in")}
			}
			e, err := coord.StartEmbedded(coord.EmbeddedConfig{Dir: dir, ClientURL: listen})
			if err != nil {
				return err
			}
			defer e.Close()
			fmt.Fprintf(cmd.ErrOrStderr(), "%s etcd: serving on %s\n", opts.Name, e.Endpoints[0])
			<-cmd.Context().Done()
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the `directory` of etcd's data")
	cmd.Flags().StringVar(&listen, "listen", "http://127.0.0.1:2379", "the client `URL` to serve on (port 0 picks a free one)")
	return cmd
}
