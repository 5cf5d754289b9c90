package commands

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"vpc-cni/store"
)

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
			in, err := newInstaller(c)
			if err != nil {
				return err
			}
			return in.uninstall(c.Bool("purge"))
		},
	}
}

func (in *installer) uninstall(purge bool) error {
	in.warnPods()
	if err := in.remove(filepath.Join(in.cniConf, conflistName)); err != nil {
		return err
	}
	if err := in.disableTimer(); err != nil {
		return err
	}
	paths := []string{filepath.Join(unitDir, timerName), filepath.Join(unitDir, serviceName), cronPath,
		in.cli(), filepath.Join(in.cniBin, PluginName)}
	if purge {
		paths = append(paths, in.config, in.stateDir, logDir)
	}
	for _, p := range paths {
		if err := in.remove(p); err != nil {
			return err
		}
	}
	if !purge {
		in.say("kept       %s and %s (--purge removes them)", in.config, in.stateDir)
	}
	in.sum("uninstalled")
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
	if _, err := os.Stat(in.at(filepath.Join(unitDir, timerName))); err != nil {
		return nil
	}
	if why := in.systemdSkipped(); why != "" {
		in.say("skipped    systemctl disable --now %s (%s)", timerName, why)
		return nil
	}
	if out, err := exec.Command("systemctl", "disable", "--now", timerName).CombinedOutput(); err != nil {
		return fmt.Errorf("systemctl disable --now %s: %v: %s", timerName, err, strings.TrimSpace(string(out)))
	}
	in.changed++
	in.say("disabled   %s", timerName)
	return nil
}

// warnPods names the pods that still hold addresses: once the plugin is
// gone their DEL fails, and the runtime retries it until it is back.
func (in *installer) warnPods() {
	if _, err := os.Stat(filepath.Join(in.at(in.stateDir), store.DBFile)); err != nil {
		return
	}
	st, err := store.Open(in.at(in.stateDir), store.Options{ReadOnly: true})
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
		in.say("warning: %d pod(s) hold addresses; their DEL fails until vpc-cni is installed again (drain the node first)", n)
	}
}
