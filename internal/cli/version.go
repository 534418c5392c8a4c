package cli

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is the release, set at build time with
// -ldflags "-X github.com/gale-stream/gale/internal/cli.version=v1.2.3".
// Left at "dev", a program that depends on a released Gale module reports
// that module's version.
var version = "dev"

// galeModule is Gale's module path, as a dependency of a user's program.
const galeModule = "github.com/gale-stream/gale"

type versionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
}

// CurrentVersion is this binary's Gale version, with the Go version,
// OS and architecture it was built with.
func CurrentVersion() versionInfo {
	v := versionInfo{Version: version, GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v.Version == "dev" {
			for _, d := range bi.Deps {
				if d.Path == galeModule && d.Version != "" && d.Version != "(devel)" {
					v.Version = d.Version
				}
			}
		}
		// The revision built is Gale's own only in Gale's module (cmd/gale),
		// not in a user's program.
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && bi.Main.Path == galeModule {
				v.Commit = s.Value
			}
		}
	}
	return v
}

func newVersionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of gale",
		Args:  NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := CurrentVersion()
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(v)
			}
			commit := ""
			if v.Commit != "" {
				commit = " (" + v.Commit + ")"
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "gale %s%s %s %s/%s\n", v.Version, commit, v.GoVersion, v.OS, v.Arch)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document")
	return cmd
}
