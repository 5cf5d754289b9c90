// Package install puts this binary on a node and takes it off again: the
// plugin and CLI binaries, the configuration file, the timer (systemd or
// cron), a first reconcile and, last, the conflist. Every step is
// idempotent and says what it did; a second run changes nothing.
package install

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"vpc-cni/internal/printers"
	"vpc-cni/internal/usage"
	"vpc-cni/maxpods"
)

// Where an installed node keeps its files, as the host sees them (Root is
// prepended only when vpcctl touches them, never in what it writes).
const (
	DefaultCNIBinDir  = "/opt/cni/bin"
	DefaultCNIConfDir = "/etc/cni/net.d"
	DefaultBinDir     = "/usr/local/bin"
	CLIPath           = DefaultBinDir + "/vpcctl" // as the shipped service runs it
	// ServiceName and TimerName are the shipped units.
	unitDir     = "/etc/systemd/system"
	ServiceName = "vpc-cni-reconcile.service"
	TimerName   = "vpc-cni-reconcile.timer"
	// MaxPodsServiceName writes the kubelet's maxPods drop-in at boot.
	MaxPodsServiceName = "vpc-cni-max-pods.service"
	// DefaultKubeletDropIn is the drop-in the boot unit writes, in the
	// kubelet's --config-dir (the kubelet then needs that flag).
	DefaultKubeletDropIn = maxpods.KubeletConfigDir + "/" + maxpods.DropInName
	cronPath             = "/etc/cron.d/vpc-cni"
	conflistName         = "10-vpc-cni.conflist"
	logDir               = "/var/log/vpc-cni"
)

// Layout is where install and uninstall put the files: host paths, and the
// Root they live under on this machine ("/" for the running system).
type Layout struct {
	Root     string
	CNIBin   string
	CNIConf  string
	BinDir   string
	Config   string
	StateDir string
	// KubeletDropIn: the kubelet configuration drop-in with maxPods that
	// the systemd path writes; its directory is the kubelet's --config-dir.
	KubeletDropIn string
}

// Report is what a run did: Changed counts the files written or removed
// and the units enabled or disabled.
type Report struct {
	Verb    string // "installed" or "uninstalled"
	Changed int
}

// Summary is the run in one line, saying whether anything changed.
func (r Report) Summary() string {
	if r.Changed == 0 {
		return "nothing changed: already " + r.Verb
	}
	return fmt.Sprintf("%s: %s", r.Verb, printers.Plural(r.Changed, "change", "changes"))
}

// installer carries one install or uninstall run: where, and what changed.
type installer struct {
	Layout
	out     io.Writer
	changed int
	image   bool // Options.Image: no node state, units enabled but not started
}

// newInstaller checks the layout: every host path absolute.
func newInstaller(l Layout, out io.Writer) (*installer, error) {
	root, err := filepath.Abs(l.Root)
	if err != nil {
		return nil, usage.Errorf("--root %q: %v", l.Root, err)
	}
	l.Root = root
	for _, p := range []struct{ flag, path string }{{"--cni-bin-dir", l.CNIBin}, {"--cni-conf-dir", l.CNIConf},
		{"--bin-dir", l.BinDir}, {"--config", l.Config}, {"--state-dir", l.StateDir}, {"--kubelet-dropin", l.KubeletDropIn}} {
		if !filepath.IsAbs(p.path) {
			return nil, usage.Errorf("%s %q: must be an absolute path (as the host sees it; --root is prepended)", p.flag, p.path)
		}
	}
	return &installer{Layout: l, out: out}, nil
}

// cli is where vpcctl is installed, as the host sees it.
func (in *installer) cli() string { return filepath.Join(in.BinDir, "vpcctl") }

// at is where vpcctl touches a host path: under Root.
func (in *installer) at(hostPath string) string { return filepath.Join(in.Root, hostPath) }

// underRoot says whether the files are not the running system's.
func (in *installer) underRoot() bool { return in.Root != "/" }

func (in *installer) say(format string, args ...any) { fmt.Fprintf(in.out, format+"\n", args...) }

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
