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
	"time"

	"vpc-cni/deploy"
	"vpc-cni/iamcheck"
	"vpc-cni/internal/atomicfile"
	"vpc-cni/internal/printers"
	"vpc-cni/internal/usage"
	"vpc-cni/plugin"
	"vpc-cni/settings"
	"vpc-cni/status"
	"vpc-cni/store"
)

// Options are an install's inputs beyond the layout.
type Options struct {
	Timer      string   // what runs the reconcile: systemd, cron or none
	Sets       []string // KEY=VALUE for a new configuration file
	ConfigFrom string   // replace the configuration file with this file's content
	Env        settings.Lookup
	// FirstPass runs the first reconcile under the lock (the CLI wires it
	// to EC2 and bounds it by --timeout); its error is worded for the
	// operator and ends the install.
	FirstPass func(st *store.Store, knobs settings.Inputs) (Pass, error)
	// OnLockWait is told when the first pass waits for the reconcile lock.
	OnLockWait func(store.LockWait) func(got bool)
	// IAMCheck checks the node's role against what the installed
	// configuration needs (the CLI wires it to EC2); nil skips the check.
	IAMCheck func(knobs settings.Inputs) (iamcheck.Report, error)
	// Image: installing into a machine image (an AMI builder): everything
	// but node state. No pass runs and no state file is written; the units
	// are enabled, not started; each instance made from the image learns
	// itself at boot (image.go).
	Image bool
}

// Pass is what the first reconcile did, as install reports it.
type Pass struct {
	Calls  []string // EC2 calls made
	Failed []string // what failed in the pass
	Acted  bool     // it changed something
}

// Install runs the steps in order, printing each on out; the conflist comes
// last and only when the pool can serve a pod, so the runtime never reports
// a node ready that would fail its first ADD.
func Install(l Layout, o Options, out io.Writer) (Report, error) {
	in, err := newInstaller(l, out)
	if err != nil {
		return Report{}, err
	}
	steps, err := in.installSteps(o)
	if err != nil {
		return Report{}, err
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return Report{"installed", in.changed}, err
		}
	}
	return Report{"installed", in.changed}, nil
}

func (in *installer) installSteps(o Options) ([]func() error, error) {
	if o.Timer != "systemd" && o.Timer != "cron" && o.Timer != "none" {
		return nil, usage.Errorf("--timer %q: must be systemd, cron or none", o.Timer)
	}
	sets, err := parseSets(o.Sets)
	if err != nil {
		return nil, err
	}
	bin, err := executable()
	if err != nil {
		return nil, err
	}
	if o.Image {
		return in.imageSteps(o, bin, sets)
	}
	return []func() error{
		func() error { return in.file(filepath.Join(in.CNIBin, plugin.Name), bin, 0o755) },
		func() error { return in.file(in.cli(), bin, 0o755) },
		func() error { return in.configFile(sets, o.ConfigFrom) },
		func() error { return in.iamCheck(o) },
		func() error { return in.scheduler(o.Timer) },
		func() error { return in.firstReconcile(o) },
		func() error {
			if o.Timer != "systemd" {
				return nil // the kubelet's capacity is the bootstrap's (install.md)
			}
			return in.kubeletCapacity(o)
		},
		func() error { return in.conflist(sets) },
	}, nil
}

// file writes one file atomically unless it already holds these bytes.
func (in *installer) file(hostPath string, data []byte, perm fs.FileMode) error {
	p := in.at(hostPath)
	if atomicfile.Same(p, data, perm) {
		in.say("unchanged  %s", hostPath)
		return nil
	}
	if err := atomicfile.Write(p, data, perm); err != nil {
		return fmt.Errorf("installing %s: %w", p, err)
	}
	in.changed++
	in.say("installed  %s", hostPath)
	return nil
}

// parseSets checks --set KEY=VALUE pairs as the configuration file would
// hold them: known keys, valid values.
func parseSets(sets []string) (*settings.File, error) {
	f, err := settings.ParseFile("--set", []byte(strings.Join(sets, "\n")))
	if err != nil {
		return nil, usage.Wrap(err)
	}
	if _, err := settings.Resolve(settings.Overrides{}, settings.Inputs{File: f}); err != nil {
		return nil, usage.Wrap(err)
	}
	return f, nil
}

// configFile writes the knobs' file with the keys given, after the commented
// list of every knob. An existing file is the operator's and is kept; keys
// given now that it sets differently are named, so nothing is silently lost.
func (in *installer) configFile(sets *settings.File, from string) error {
	if from != "" {
		return in.configFrom(from)
	}
	p := in.at(in.Config)
	old, err := settings.ReadFile(p, false)
	if err != nil {
		return err
	}
	if _, statErr := os.Stat(p); statErr == nil {
		in.say("kept       %s (it exists; edit it to change the knobs)", in.Config)
		for _, k := range settings.FileKeys {
			want, _, given := (settings.Inputs{File: sets}).Lookup(k)
			have, _, _ := (settings.Inputs{File: old}).Lookup(k)
			if given && want != have {
				in.say("warning: --set %s=%s not applied: %s has %q", k, want, in.Config, have)
			}
		}
		return nil
	}
	text := deploy.ConfigExample
	var given []string
	for _, k := range settings.FileKeys {
		if v, _, ok := (settings.Inputs{File: sets}).Lookup(k); ok {
			given = append(given, k+"="+v)
		}
	}
	if len(given) > 0 {
		text += "\n# Set by vpcctl install:\n" + strings.Join(given, "\n") + "\n"
	}
	return in.file(in.Config, []byte(text), 0o644)
}

// configFrom replaces the configuration file with a source that owns it
// (a ConfigMap): checked first, so a bad source leaves the node as it was.
func (in *installer) configFrom(from string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return usage.Errorf("--config-from: %v", err)
	}
	f, err := settings.ParseFile(from, data)
	if err == nil {
		_, err = settings.Resolve(settings.Overrides{}, settings.Inputs{File: f})
	}
	if err != nil {
		return usage.Wrap(err)
	}
	return in.file(in.Config, data, 0o644)
}

// scheduler installs what runs `vpcctl reconcile` every interval.
func (in *installer) scheduler(timer string) error {
	switch timer {
	case "systemd":
		changedBefore := in.changed
		if err := in.file(filepath.Join(unitDir, ServiceName), []byte(in.unit(deploy.Service)), 0o644); err != nil {
			return err
		}
		if err := in.file(filepath.Join(unitDir, TimerName), []byte(deploy.Timer), 0o644); err != nil {
			return err
		}
		if in.image {
			return in.enableAtBoot(TimerName, in.changed > changedBefore)
		}
		return in.enableTimer(in.changed > changedBefore)
	case "cron":
		return in.file(cronPath, []byte(in.cronFile()), 0o644)
	}
	in.say("skipped    timer (--timer none: something else runs vpcctl reconcile)")
	return nil
}

// unit is the shipped service with this install's paths.
func (in *installer) unit(text string) string {
	if in.StateDir != store.DefaultDir {
		text = strings.ReplaceAll(text, store.DefaultDir, in.StateDir)
	}
	if in.Config != settings.DefaultFile {
		text = strings.ReplaceAll(text, "reconcile ", "--config "+in.Config+" reconcile ")
	}
	return strings.ReplaceAll(text, CLIPath, in.cli())
}

// cronFile runs a pass every 30 s, as the timer does (cron's unit is a minute).
func (in *installer) cronFile() string {
	cmd := in.unitCommand()
	return "# vpc-cni: keep the warm pool at its targets (written by vpcctl install)\n" +
		"* * * * * root " + cmd + "\n" +
		"* * * * * root sleep 30; " + cmd + "\n"
}

// unitCommand is the service's ExecStart command line.
func (in *installer) unitCommand() string {
	for _, line := range strings.Split(in.unit(deploy.Service), "\n") {
		if cmd, ok := strings.CutPrefix(line, "ExecStart="); ok {
			return cmd
		}
	}
	return in.cli() + " reconcile"
}

// systemdSkipped says why systemctl is not run, or "" when it may be.
func (in *installer) systemdSkipped() string {
	if in.underRoot() {
		return "--root " + in.Root + " is not the running system"
	}
	if _, err := exec.LookPath("systemctl"); err != nil {
		return "systemctl not found"
	}
	if _, err := os.Stat("/run/systemd/system"); err != nil {
		return "systemd is not running"
	}
	return ""
}

// enableTimer enables and starts the timer unless it already runs the
// units as written.
func (in *installer) enableTimer(unitsChanged bool) error {
	if why := in.systemdSkipped(); why != "" {
		in.say("skipped    systemctl enable --now %s (%s)", TimerName, why)
		return nil
	}
	enabled := exec.Command("systemctl", "is-enabled", "--quiet", TimerName).Run() == nil
	active := exec.Command("systemctl", "is-active", "--quiet", TimerName).Run() == nil
	if enabled && active && !unitsChanged {
		in.say("unchanged  %s enabled and active", TimerName)
		return nil
	}
	for _, args := range [][]string{{"daemon-reload"}, {"enable", "--now", TimerName}} {
		if out, err := exec.Command("systemctl", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("systemctl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
	}
	in.changed++
	in.say("enabled    %s", TimerName)
	return nil
}

// firstReconcile fills the pool and checks it can serve a pod: a free
// address after the pass. Without one the conflist is not written.
func (in *installer) firstReconcile(o Options) error {
	knobs, st, err := in.openNode(o)
	if err != nil {
		return err
	}
	rep, err := o.FirstPass(st, knobs)
	if err != nil {
		return err
	}
	s, err := status.Load(st, knobs, time.Now())
	if err != nil {
		return err
	}
	if s.Figures.Free == 0 {
		return fmt.Errorf("after the first reconcile the pool has no free address (%s), so the conflist is not written; see vpcctl pool status and run vpcctl install again",
			strings.Join(append(rep.Failed, "no failure reported"), "; "))
	}
	if rep.Acted {
		in.changed++
	}
	in.say("reconciled pool: %s; EC2 calls %s", printers.Plural(s.Figures.Free, "free address", "free addresses"), printers.CountCalls(rep.Calls))
	return nil
}

// openNode reads the installed configuration file and opens the state.
func (in *installer) openNode(o Options) (settings.Inputs, *store.Store, error) {
	f, err := settings.ReadFile(in.at(in.Config), true)
	if err != nil {
		return settings.Inputs{}, nil, usage.Wrap(err)
	}
	st, err := store.Open(in.at(in.StateDir), store.Options{OnLockWait: o.OnLockWait})
	if err != nil {
		return settings.Inputs{}, nil, fmt.Errorf("state dir %s: %w", in.at(in.StateDir), err)
	}
	return settings.Inputs{Env: o.Env, File: f}, st, nil
}

// earlierConfigs are network configurations the runtime would pick before
// ours: it uses the first file in lexical order.
func earlierConfigs(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		ext := filepath.Ext(n)
		if n < conflistName && (ext == ".conf" || ext == ".conflist" || ext == ".json") {
			out = append(out, n)
		}
	}
	return out
}

// iamCheck stops the install, before the timer and the first pass, when the
// node's role lacks an EC2 action the installed configuration needs:
// printing each action and the statements to add.
func (in *installer) iamCheck(o Options) error {
	if o.IAMCheck == nil {
		in.say("skipped    IAM check (--skip-iam-check)")
		return nil
	}
	f, err := settings.ReadFile(in.at(in.Config), true)
	if err != nil {
		return usage.Wrap(err)
	}
	rep, err := o.IAMCheck(settings.Inputs{Env: o.Env, File: f})
	if err != nil {
		return fmt.Errorf("IAM check failed, so the conflist is not written: %w (--skip-iam-check installs without the check)", err)
	}
	if !rep.OK() {
		if err := printers.Render(in.out, "table", false, rep, rep.Rows); err != nil {
			return err
		}
		if err := rep.WriteAdd(in.out); err != nil {
			return err
		}
		return fmt.Errorf("IAM check: %s; nothing scheduled and the conflist is not written: add the statements above to the node's role "+
			"and run vpcctl install again (--skip-iam-check installs without the check)", rep.Summary())
	}
	in.say("checked    IAM: %s", rep.Summary())
	return nil
}
