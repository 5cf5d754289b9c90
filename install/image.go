package install

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"vpc-cni/internal/usage"
	"vpc-cni/plugin"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// A machine image carries no node state: a state file made on the image
// builder names the builder's instance, ENIs and addresses, which no
// instance made from the image owns (a pass there sets it aside). So image
// mode installs the binaries, the configuration, the units (enabled, not
// started: they run at each instance's boot) and the conflist, and creates
// the state directory empty. Each instance's first pass, and the boot
// unit's max pods, are then its own.

// imageSteps are install's steps in image mode.
func (in *installer) imageSteps(o Options, bin []byte, sets *settings.File) ([]func() error, error) {
	if o.Timer == "cron" {
		return nil, usage.Errorf("--image with --timer cron: cron would run passes on the image builder and write its state; use --timer systemd (enabled, started at boot) or none")
	}
	in.image = true
	return []func() error{
		func() error { return in.file(filepath.Join(in.CNIBin, plugin.Name), bin, 0o755) },
		func() error { return in.file(in.cli(), bin, 0o755) },
		func() error { return in.configFile(sets, o.ConfigFrom) },
		func() error { return in.scheduler(o.Timer) },
		in.emptyStateDir,
		func() error {
			if o.Timer != "systemd" {
				return nil
			}
			return in.bootUnit()
		},
		func() error { return in.conflist(sets) },
	}, nil
}

// emptyStateDir creates the state directory (0700; the units' sandbox
// needs it to exist) and warns of a state file already in it.
func (in *installer) emptyStateDir() error {
	dir := in.at(in.StateDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("state dir %s: %w", dir, err)
	}
	in.say("skipped    first reconcile (--image: no node state; each instance made from the image learns itself at boot)")
	_, err := os.Lstat(filepath.Join(dir, store.DBFile))
	if err == nil {
		in.say("warning: %s holds a state file: remove it before capturing the image (an instance made from it sets it aside)",
			filepath.Join(in.StateDir, store.DBFile))
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("state dir %s: %w", dir, err)
	}
	return nil
}

// bootUnit writes and enables the max-pods boot unit; the kubelet drop-in
// is left to it, at each instance's boot, for that instance's type.
func (in *installer) bootUnit() error {
	before := in.changed
	if err := in.file(filepath.Join(unitDir, MaxPodsServiceName), []byte(in.maxPodsUnit()), 0o644); err != nil {
		return err
	}
	in.say("skipped    kubelet drop-in (--image: %s writes it at each boot for the instance's type; start the kubelet with --config-dir %s)",
		MaxPodsServiceName, filepath.Dir(in.KubeletDropIn))
	return in.enableBootUnit(in.changed > before)
}
