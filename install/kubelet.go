package install

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"vpc-cni/deploy"
	"vpc-cni/maxpods"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// kubeletCapacity is the systemd path's capacity before the kubelet: the
// drop-in with maxPods from the pool the first reconcile just filled, and
// the boot unit that rewrites it before every kubelet start.
func (in *installer) kubeletCapacity(o Options) error {
	knobs, st, err := in.openNode(o)
	if err != nil {
		return err
	}
	rep, err := maxpods.Online(st, knobs)
	if err != nil {
		return err
	}
	if err := in.file(in.KubeletDropIn, maxpods.DropIn(rep.MaxPods), 0o644); err != nil {
		return err
	}
	in.say("           kubelet maxPods %d: start the kubelet with --config-dir %s", rep.MaxPods, filepath.Dir(in.KubeletDropIn))
	before := in.changed
	if err := in.file(filepath.Join(unitDir, MaxPodsServiceName), []byte(in.maxPodsUnit()), 0o644); err != nil {
		return err
	}
	return in.enableBootUnit(in.changed > before)
}

// maxPodsUnit is the shipped boot unit with this install's paths.
func (in *installer) maxPodsUnit() string {
	text := deploy.MaxPodsService
	if in.StateDir != store.DefaultDir {
		text = strings.ReplaceAll(text, store.DefaultDir, in.StateDir)
	}
	if in.KubeletDropIn != DefaultKubeletDropIn {
		text = strings.ReplaceAll(text, DefaultKubeletDropIn, in.KubeletDropIn)
		text = strings.ReplaceAll(text, maxpods.KubeletConfigDir, filepath.Dir(in.KubeletDropIn))
	}
	cli := in.cli()
	if in.Config != settings.DefaultFile {
		cli += " --config " + in.Config
	}
	return strings.ReplaceAll(text, CLIPath+" ", cli+" ")
}

// enableBootUnit enables the boot unit (it runs at the next boot; install
// has just written the drop-in itself) unless it is enabled as written.
func (in *installer) enableBootUnit(unitChanged bool) error {
	return in.enableAtBoot(MaxPodsServiceName, unitChanged)
}

// enableAtBoot enables unit without starting it (it runs at the next boot)
// unless it is enabled as written.
func (in *installer) enableAtBoot(unit string, unitChanged bool) error {
	if why := in.systemdSkipped(); why != "" {
		in.say("skipped    systemctl enable %s (%s)", unit, why)
		return nil
	}
	if !unitChanged && exec.Command("systemctl", "is-enabled", "--quiet", unit).Run() == nil {
		in.say("unchanged  %s enabled", unit)
		return nil
	}
	for _, args := range [][]string{{"daemon-reload"}, {"enable", unit}} {
		if out, err := exec.Command("systemctl", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("systemctl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
	}
	in.changed++
	in.say("enabled    %s", unit)
	return nil
}

// disableBootUnit undoes enableBootUnit.
func (in *installer) disableBootUnit() error {
	if _, err := exec.LookPath("systemctl"); err != nil || in.systemdSkipped() != "" {
		return nil
	}
	if exec.Command("systemctl", "is-enabled", "--quiet", MaxPodsServiceName).Run() != nil {
		return nil
	}
	if out, err := exec.Command("systemctl", "disable", MaxPodsServiceName).CombinedOutput(); err != nil {
		return fmt.Errorf("systemctl disable %s: %v: %s", MaxPodsServiceName, err, strings.TrimSpace(string(out)))
	}
	in.changed++
	in.say("disabled   %s", MaxPodsServiceName)
	return nil
}
