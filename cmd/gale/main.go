// Command gale is the stock Gale command line: a user's program's
// subcommands (internal/cli, as galecli.Main gives them) with the
// cluster's servers, dev, demo and the benches (internal/stock), and the
// built-in example and test topologies for `gale run` and `gale submit`.
package main

import (
	"os"

	"github.com/gale-stream/gale/internal/stock"
)

func main() {
	os.Exit(stock.Main())
}
