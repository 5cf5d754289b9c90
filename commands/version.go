package commands

import (
	"runtime"

	"github.com/urfave/cli/v2"

	"vpc-cni/internal/printers"
	"vpc-cni/plugin"
)

// Set at build time by the Makefile's -ldflags: the chart's appVersion, the
// commit (with -dirty for uncommitted changes) and the commit's date.
var (
	buildVersion = "dev"
	buildCommit  = "unknown"
	buildDate    = "unknown"
)

// VersionInfo is what `vpcctl version` prints.
type VersionInfo struct {
	Version     string   `json:"version"`
	Commit      string   `json:"commit"`
	BuildDate   string   `json:"buildDate"`
	GoVersion   string   `json:"goVersion"`
	Platform    string   `json:"platform"`
	CNIVersions []string `json:"cniVersions"`
}

func versionInfo() VersionInfo {
	return VersionInfo{Version: buildVersion, Commit: buildCommit, BuildDate: buildDate, GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH, CNIVersions: plugin.CNIVersions()}
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version, commit, build date, Go version and platform",
		Flags: []cli.Flag{outputFlag("table")},
		Action: func(c *cli.Context) error {
			v := versionInfo()
			return render(c, v, func(w *printers.Table) {
				w.Row("version", v.Version)
				w.Row("commit", v.Commit)
				w.Row("build date", v.BuildDate)
				w.Row("go", v.GoVersion)
				w.Row("platform", v.Platform)
				w.Row("cni spec versions", join(v.CNIVersions))
			})
		},
	}
}
