package install

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"vpc-cni/internal/printers"
	"vpc-cni/plugin"
	"vpc-cni/store"
)

// Uninstall undoes Install, printing each step on out: the conflist first
// (the runtime then stops sending pods here), the timer, then the binaries.
// The configuration and the state stay unless purge.
func Uninstall(l Layout, purge bool, out io.Writer) (Report, error) {
	in, err := newInstaller(l, out)
	if err != nil {
		return Report{}, err
	}
	err = in.uninstall(purge)
	return Report{"uninstalled", in.changed}, err
}

func (in *installer) uninstall(purge bool) error {
	in.warnPods()
	if err := in.remove(filepath.Join(in.CNIConf, conflistName)); err != nil {
		return err
	}
	if err := in.disableTimer(); err != nil {
		return err
	}
	if err := in.disableBootUnit(); err != nil {
		return err
	}
	paths := []string{filepath.Join(unitDir, TimerName), filepath.Join(unitDir, ServiceName), cronPath,
		filepath.Join(unitDir, MaxPodsServiceName), in.KubeletDropIn,
		in.cli(), filepath.Join(in.CNIBin, plugin.Name)}
	if purge {
		paths = append(paths, in.Config, in.StateDir, store.OuterLockPath(in.StateDir), logDir)
	}
	for _, p := range paths {
		if err := in.remove(p); err != nil {
			return err
		}
	}
	if !purge {
		in.say("kept       %s and %s (--purge removes them)", in.Config, in.StateDir)
	}
	return nil
}

// remove deletes a file or directory tree if it is there.
func (in *installer) remove(hostPath string) error {
	p := in.at(hostPath)
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := os.RemoveAll(p); err != nil {
		return fmt.Errorf("removing %s: %w", p, err)
	}
	in.changed++
	in.say("removed    %s", hostPath)
	return nil
}

// disableTimer stops and disables the timer if systemd runs it.
func (in *installer) disableTimer() error {
	if _, err := os.Stat(in.at(filepath.Join(unitDir, TimerName))); err != nil {
		return nil
	}
	if why := in.systemdSkipped(); why != "" {
		in.say("skipped    systemctl disable --now %s (%s)", TimerName, why)
		return nil
	}
	if out, err := exec.Command("systemctl", "disable", "--now", TimerName).CombinedOutput(); err != nil {
		return fmt.Errorf("systemctl disable --now %s: %v: %s", TimerName, err, strings.TrimSpace(string(out)))
	}
	in.changed++
	in.say("disabled   %s", TimerName)
	return nil
}

// warnPods names the pods that still hold addresses: once the plugin is
// gone their DEL fails, and the runtime retries it until it is back.
func (in *installer) warnPods() {
	if _, err := os.Stat(filepath.Join(in.at(in.StateDir), store.DBFile)); err != nil {
		return
	}
	st, err := store.Open(in.at(in.StateDir), store.Options{ReadOnly: true})
	if err != nil {
		return
	}
	n := 0
	_ = st.View(func(tx *store.Tx) error {
		as, err := tx.Assignments()
		n = len(as)
		return err
	})
	if n > 0 {
		in.say("warning: %s addresses; their DEL fails until vpc-cni is installed again (drain the node first)", printers.Plural(n, "pod holds", "pods hold"))
	}
}
