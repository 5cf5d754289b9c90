package commands

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/iamcheck"
	"vpc-cni/install"
	"vpc-cni/pass"
	"vpc-cni/settings"
	"vpc-cni/store"
)

const defaultInstallTimeout = 2 * time.Minute

func installCommand() *cli.Command {
	return &cli.Command{
		Name:  "install",
		Usage: "install this binary on the node: plugin, CLI, configuration, timer, then the conflist",
		Description: `Copies this binary atomically to <cni-bin-dir>/vpc-cni and /usr/local/bin/vpcctl, writes
/etc/vpc-cni/config (only the keys given with --set; an existing file is kept), the systemd
service and timer (or a cron file, or nothing), enables them, runs a first reconcile, with the
systemd timer writes the kubelet drop-in with the node's maxPods (--kubelet-dropin) and enables
vpc-cni-max-pods.service, which rewrites it at boot before the kubelet starts, and, only once the
pool has a free address, writes the conflist last: the runtime reports the node ready only when a
pod can get an address. Before the timer, it checks that the node's role allows every EC2 action
the configuration needs (as vpcctl doctor --iam does) and stops with the list when one is missing
(--skip-iam-check skips it). Running it again changes nothing and says so.
--image installs into a machine image (an AMI builder) everything but node state: no first
reconcile and no state file (the builder's would name the builder's instance and addresses), the
timer and the boot unit enabled but not started, no kubelet drop-in (the boot unit writes it for
each instance's type), the conflist written: each instance made from the image learns itself at
boot and reports ready once its first pass has run.
Exit codes: 0 installed, 1 a step failed (the conflist is then not written), 2 bad usage.

Examples:
   vpcctl install
   vpcctl install --set WARM_IP_TARGET=5 --set MINIMUM_IP_TARGET=10
   vpcctl install --timer none --root /host --config-from /config/config   # a DaemonSet's init container
   vpcctl install --image   # in an AMI build: no node state`,
		Flags: append(layoutFlags(),
			&cli.StringFlag{Name: "timer", Value: "systemd", Usage: "what runs the reconcile: systemd, cron or none"},
			&cli.StringSliceFlag{Name: "set", Usage: "KEY=VALUE for a new configuration file (repeat)"},
			&cli.StringFlag{Name: "config-from", Usage: "replace the configuration file with this file's content (a mounted ConfigMap owns it)"},
			&cli.DurationFlag{Name: "timeout", Value: defaultInstallTimeout, Usage: "deadline for the first reconcile"},
			&cli.BoolFlag{Name: "skip-iam-check", Usage: "install without first checking that the node's role allows the EC2 actions the configuration needs (vpcctl doctor --iam)"},
			&cli.BoolFlag{Name: "image", Usage: "install into a machine image (an AMI builder): everything but node state; no first reconcile, no state file, units enabled but not started"},
		),
		Before: noArgs,
		Action: func(c *cli.Context) error {
			rep, err := install.Install(layout(c), install.Options{Timer: c.String("timer"), Sets: c.StringSlice("set"),
				ConfigFrom: c.String("config-from"), Env: envLookup, FirstPass: installPass(c), OnLockWait: lockWaitNotice(c), IAMCheck: installIAMCheck(c),
				Image: c.Bool("image")}, c.App.Writer)
			return summarise(c, rep, err)
		},
	}
}

// layoutFlags are the flags install and uninstall share.
func layoutFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "root", Value: "/", Usage: "install into this directory tree (tests, a container with the host at /host); systemctl is then skipped"},
		cniCacheDirFlag(), // a lost state is rebuilt with the runtime's names for its pods
		&cli.StringFlag{Name: "cni-bin-dir", Value: install.DefaultCNIBinDir, Usage: "where the runtime looks for CNI plugins"},
		&cli.StringFlag{Name: "cni-conf-dir", Value: install.DefaultCNIConfDir, Usage: "where the runtime looks for network configurations"},
		&cli.StringFlag{Name: "bin-dir", Value: install.DefaultBinDir, Usage: "where vpcctl goes (on the PATH; a node with a read-only /usr can use the CNI bin dir)"},
		&cli.StringFlag{Name: "kubelet-dropin", Value: install.DefaultKubeletDropIn, Usage: "the kubelet drop-in with maxPods (--timer systemd); its directory is the kubelet's --config-dir"},
	}
}

func uninstallCommand() *cli.Command {
	return &cli.Command{
		Name:  "uninstall",
		Usage: "undo vpcctl install, conflist first; the configuration and the state stay unless --purge",
		Description: `Removes the conflist first (the runtime then stops sending pods here), stops and removes
the timer (or cron file), then the plugin and CLI binaries. The configuration file and the state
directory stay, as a Debian package's configuration does, unless --purge; the ENIs and addresses
stay attached in EC2 (they go with the instance, or a later install adopts them).
Exit codes: 0 done, 1 a step failed, 2 bad usage.

Examples:
   vpcctl uninstall
   vpcctl uninstall --purge --root /host`,
		Flags: append(layoutFlags(),
			&cli.BoolFlag{Name: "purge", Usage: "also remove the configuration file, the state directory and the logs"},
		),
		Before: noArgs,
		Action: func(c *cli.Context) error {
			rep, err := install.Uninstall(layout(c), c.Bool("purge"), c.App.Writer)
			return summarise(c, rep, err)
		},
	}
}

// layout is where the layout flags put the files.
func layout(c *cli.Context) install.Layout {
	return install.Layout{Root: c.String("root"), CNIBin: c.String("cni-bin-dir"), CNIConf: c.String("cni-conf-dir"),
		BinDir: c.String("bin-dir"), Config: configPath(c), StateDir: stateDir(c), KubeletDropIn: c.String("kubelet-dropin")}
}

// summarise ends a successful run with one line saying whether anything changed.
func summarise(c *cli.Context, rep install.Report, err error) error {
	if err == nil {
		fmt.Fprintln(c.App.Writer, rep.Summary())
	}
	return err
}

// installPass is install's first reconcile: under the lock, bounded by
// --timeout; a failure keeps the conflist unwritten.
func installPass(c *cli.Context) func(*store.Store, settings.Inputs) (install.Pass, error) {
	return func(st *store.Store, knobs settings.Inputs) (install.Pass, error) {
		ctx, release, err := pass.Exclusive(c.Context, st, c.Duration("timeout"))
		if err != nil {
			return install.Pass{}, fmt.Errorf("first reconcile did not run, so the conflist is not written: %w; run vpcctl install again", err)
		}
		defer release()
		rep, err := pass.Recovering(ctx, st, knobs, passOptions(c)) // a lost state is rebuilt, never adopted as free
		if err != nil {
			return install.Pass{}, fmt.Errorf("first reconcile failed, so the conflist is not written (the node stays not ready): %w; "+
				"fix it and run vpcctl install again", pass.Classify(ctx, err))
		}
		return install.Pass{Calls: rep.Calls, Failed: rep.Failed, Acted: pass.Changed(rep)}, nil
	}
}

// installIAMCheck is doctor --iam on the installed configuration, bounded
// by --timeout; nil with --skip-iam-check.
func installIAMCheck(c *cli.Context) func(settings.Inputs) (iamcheck.Report, error) {
	if c.Bool("skip-iam-check") {
		return nil
	}
	return func(knobs settings.Inputs) (iamcheck.Report, error) {
		ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
		defer cancel()
		return iamcheck.Node(ctx, knobs, filepath.Join(c.String("root"), stateDir(c)), "vpc-cni/"+buildVersion)
	}
}
