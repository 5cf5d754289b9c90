package commands

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"
)

// Where an installed node keeps its files, as the host sees them (--root is
// prepended only when vpcctl touches them, never in what it writes).
const (
	defaultCNIBinDir  = "/opt/cni/bin"
	defaultCNIConfDir = "/etc/cni/net.d"
	defaultBinDir     = "/usr/local/bin"
	cliPath           = defaultBinDir + "/vpcctl" // as the shipped service runs it
	unitDir           = "/etc/systemd/system"
	serviceName       = "vpc-cni-reconcile.service"
	timerName         = "vpc-cni-reconcile.timer"
	cronPath          = "/etc/cron.d/vpc-cni"
	conflistName      = "10-vpc-cni.conflist"
	logDir            = "/var/log/vpc-cni"
)

func installCommand() *cli.Command {
	return &cli.Command{
		Name:  "install",
		Usage: "install this binary on the node: plugin, CLI, configuration, timer, then the conflist",
		Description: `Copies this binary atomically to <cni-bin-dir>/vpc-cni and /usr/local/bin/vpcctl, writes
/etc/vpc-cni/config (only the keys given with --set; an existing file is kept), the systemd
service and timer (or a cron file, or nothing), enables them, runs a first reconcile and, only
once the pool has a free address, writes the conflist last: the runtime reports the node ready
only when a pod can get an address. Running it again changes nothing and says so.
Exit codes: 0 installed, 1 a step failed (the conflist is then not written), 2 bad usage.

Examples:
   vpcctl install
   vpcctl install --set WARM_IP_TARGET=5 --set MINIMUM_IP_TARGET=10
   vpcctl install --timer none --root /host --config-from /config/config   # a DaemonSet's init container`,
		Flags: append(layoutFlags(),
			&cli.StringFlag{Name: "timer", Value: "systemd", Usage: "what runs the reconcile: systemd, cron or none"},
			&cli.StringSliceFlag{Name: "set", Usage: "KEY=VALUE for a new configuration file (repeat)"},
			&cli.StringFlag{Name: "config-from", Usage: "replace the configuration file with this file's content (a mounted ConfigMap owns it)"},
			&cli.DurationFlag{Name: "timeout", Value: defaultInstallTimeout, Usage: "deadline for the first reconcile"},
		),
		Before: noArgs,
		Action: func(c *cli.Context) error {
			in, err := newInstaller(c)
			if err != nil {
				return err
			}
			return in.install(c)
		},
	}
}

// layoutFlags are the flags install and uninstall share.
func layoutFlags() []cli.Flag {
	return []cli.Flag{
		stateDirFlag(),
		&cli.StringFlag{Name: "root", Value: "/", Usage: "install into this directory tree (tests, a container with the host at /host); systemctl is then skipped"},
		&cli.StringFlag{Name: "cni-bin-dir", Value: defaultCNIBinDir, Usage: "where the runtime looks for CNI plugins"},
		&cli.StringFlag{Name: "cni-conf-dir", Value: defaultCNIConfDir, Usage: "where the runtime looks for network configurations"},
		&cli.StringFlag{Name: "bin-dir", Value: defaultBinDir, Usage: "where vpcctl goes (on the PATH; a node with a read-only /usr can use the CNI bin dir)"},
	}
}

// installer carries one install or uninstall run: where, and what changed.
type installer struct {
	out      io.Writer
	root     string
	cniBin   string // host paths
	cniConf  string
	binDir   string
	config   string
	stateDir string
	changed  int
}

func newInstaller(c *cli.Context) (*installer, error) {
	root, err := filepath.Abs(c.String("root"))
	if err != nil {
		return nil, usagef("--root %q: %v", c.String("root"), err)
	}
	in := &installer{out: c.App.Writer, root: root, cniBin: c.String("cni-bin-dir"),
		cniConf: c.String("cni-conf-dir"), binDir: c.String("bin-dir"), config: c.String("config"), stateDir: stateDir(c)}
	for _, p := range []struct{ flag, path string }{{"--cni-bin-dir", in.cniBin}, {"--cni-conf-dir", in.cniConf}, {"--bin-dir", in.binDir},
		{"--config", in.config}, {"--state-dir", in.stateDir}} {
		if !filepath.IsAbs(p.path) {
			return nil, usagef("%s %q: must be an absolute path (as the host sees it; --root is prepended)", p.flag, p.path)
		}
	}
	return in, nil
}

// at is where vpcctl touches a host path: under --root.
// cli is where vpcctl is installed, as the host sees it.
func (in *installer) cli() string { return filepath.Join(in.binDir, "vpcctl") }

func (in *installer) at(hostPath string) string { return filepath.Join(in.root, hostPath) }

// underRoot says whether the files are not the running system's.
func (in *installer) underRoot() bool { return in.root != "/" }

func (in *installer) say(format string, args ...any) { fmt.Fprintf(in.out, format+"\n", args...) }

// sum ends a run with one line saying whether anything changed.
func (in *installer) sum(verb string) {
	if in.changed == 0 {
		in.say("nothing changed: already %s", verb)
		return
	}
	in.say("%s: %d change(s)", verb, in.changed)
}

// executable is the running binary's bytes: what install copies.
func executable() ([]byte, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the running binary: %w", err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		return nil, fmt.Errorf("reading the running binary: %w", err)
	}
	return data, nil
}
