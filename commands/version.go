package commands

import (
	"runtime"

	"github.com/urfave/cli/v2"

	"vpc-cni/internal/printers"
	"vpc-cni/plugin"
)

// Set at build time with -ldflags "-X vpc-cni/commands.buildVersion=... -X vpc-cni/commands.buildCommit=...".
var (
	buildVersion = "dev"
	buildCommit  = "unknown"
)

// VersionInfo is what `vpcctl version` prints.
type VersionInfo struct {
	Version     string   `json:"version"`
	Commit      string   `json:"commit"`
	GoVersion   string   `json:"goVersion"`
	CNIVersions []string `json:"cniVersions"`
}

func versionInfo() VersionInfo {
	return VersionInfo{Version: buildVersion, Commit: buildCommit, GoVersion: runtime.Version(), CNIVersions: plugin.CNIVersions()}
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version, commit and Go version",
		Flags: []cli.Flag{outputFlag("table")},
		Action: func(c *cli.Context) error {
			v := versionInfo()
			return render(c, v, func(w *printers.Table) {
				w.Row("version", v.Version)
				w.Row("commit", v.Commit)
				w.Row("go", v.GoVersion)
				w.Row("cni spec versions", join(v.CNIVersions))
			})
		},
	}
}
