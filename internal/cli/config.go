package cli

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/config"
)

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Inspect Gale's configuration",
		Args:  cobra.ArbitraryArgs,
		RunE:  RunGroup,
	}
	cmd.AddCommand(newConfigShowCmd())
	return cmd
}

func newConfigShowCmd() *cobra.Command {
	var file string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Print the effective configuration and the layer each value came from",
		Long: `Print every configuration key with its effective value and where it came
from: the built-in default or gale.yaml (--file). An unknown key, a value of
the wrong type or a key gale.yaml may not set is reported as an error.`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var fileConf gale.Config
			if file != "" {
				c, err := config.LoadFile(file)
				if err != nil {
					return err
				}
				fileConf = c
			}
			eff, err := config.Resolve(fileConf, nil)
			if err != nil {
				return err
			}
			entries := eff.Entries()
			out := cmd.OutOrStdout()
			if asJSON {
				type row struct {
					Key    string `json:"key"`
					Value  any    `json:"value"`
					Source string `json:"source"`
					Scope  string `json:"scope"`
					Doc    string `json:"doc"`
				}
				rows := make([]row, 0, len(entries))
				for _, e := range entries {
					rows = append(rows, row{e.Key, e.Value, e.SourceName(), e.Scope.String(), e.Doc})
				}
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE\tSCOPE")
			for _, e := range entries {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Key, showValue(e.Value), e.SourceName(), e.Scope)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&file, "file", "", "a gale.yaml to layer over the defaults")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document")
	return cmd
}

// showValue formats an effective value for the table: "(unset)", a scalar,
// a list as [a b], or a mapping as YAML's flow style writes it, in key
// order: {billing: 1, wordcount: 2}.
func showValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "(unset)"
	case map[string]int:
		pairs := make([]string, 0, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			pairs = append(pairs, fmt.Sprintf("%s: %d", k, x[k]))
		}
		return "{" + strings.Join(pairs, ", ") + "}"
	}
	return fmt.Sprint(v)
}
