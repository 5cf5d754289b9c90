package plugin

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// takeGrowing waits for the reconcile lock within the ADD deadline and then
// tries the pool again before growing it: a burst of ADDs queued on the lock
// is served by the one grow pass that ran ahead of them, instead of each
// running its own. ErrNoFreeAddress comes with the reason.
func (c *call) takeGrowing(want store.Assignment) (store.Assignment, string, error) {
	deadline, _ := c.ctx.Deadline()
	unlock, held, err := c.store.LockReconcile(true, time.Until(deadline))
	if err != nil || !held {
		return store.Assignment{}, fmt.Sprintf("could not take the reconcile lock in time: %v", err), store.ErrNoFreeAddress
	}
	defer unlock()
	if a, err := c.takeOnce(want); !errors.Is(err, store.ErrNoFreeAddress) {
		return a, "", err
	}
	grown, reason := c.growInline()
	if !grown {
		return store.Assignment{}, reason, store.ErrNoFreeAddress
	}
	a, err := c.takeOnce(want)
	return a, reason, err
}

// growInline runs a grow-only reconcile pass; the caller holds the reconcile
// lock. It reports whether taking again is worth it and, if the pool could
// not grow, why.
func (c *call) growInline() (bool, string) {
	s, err := c.storedSettings()
	if err != nil {
		return false, err.Error()
	}
	// No special case for MINIMUM_IP_TARGET alone: this ADD is registered as
	// waiting, and the pass grows for waiting pods under every rule.
	runner, err := reconcile.NewRunner(c.ctx, c.store, storedEnv(s), settings.Overrides{}, "vpc-cni-plugin")
	if err != nil {
		return false, "inline grow: " + err.Error()
	}
	runner.Log = c.log
	rep, err := runner.Run(c.ctx, reconcile.Options{GrowOnly: true})
	c.log.Info("inline grow", "calls", rep.Calls, "actions", rep.Plan.Actions, "figures", rep.Plan.Figures,
		"failed", rep.Failed, "took", rep.Duration, "err", err)
	if err != nil {
		return true, "inline grow failed: " + err.Error()
	}
	return true, whyNoGrowth(rep)
}

// whyNoGrowth explains an empty or failed grow pass from its figures.
func whyNoGrowth(rep *reconcile.Report) string {
	f := rep.Plan.Figures
	switch {
	case len(rep.Failed) > 0:
		return strings.Join(rep.Failed, "; ")
	case f.MaxPods > 0 && f.Total >= f.MaxPods:
		return fmt.Sprintf("the node holds %d addresses, its max pods", f.Total)
	case f.Shortfall > 0:
		return fmt.Sprintf("growth is blocked (ENI limit %d reached or subnet back-off); shortfall %d", f.MaxENIs, f.Shortfall)
	case f.Cooling > 0:
		return fmt.Sprintf("%d addresses are cooling down (IP_COOLDOWN_PERIOD)", f.Cooling)
	}
	return "new addresses are on an ENI whose host side is not ready yet"
}

func (c *call) storedSettings() (store.Settings, error) {
	var s store.Settings
	err := c.store.View(func(tx *store.Tx) (err error) { s, err = tx.Settings(); return err })
	if isUninitialized(err) {
		err = nil
	}
	return s, err
}

// storedEnv serves the targets the last reconcile acted on, so the plugin
// (run with kubelet's environment) follows the operator's configuration.
func storedEnv(s store.Settings) settings.Lookup {
	values := storedValues(s)
	return func(k string) (string, bool) {
		if v, ok := values[k]; ok {
			return v, true
		}
		return os.LookupEnv(k)
	}
}

// storedValues are the knobs of the last reconcile as environment values;
// none when no reconcile has run yet.
func storedValues(s store.Settings) map[string]string {
	if s.UpdatedAt.IsZero() {
		return nil
	}
	e := s.Effective
	return map[string]string{
		settings.WarmENITarget: strconv.Itoa(e.WarmENITarget), settings.WarmIPTarget: strconv.Itoa(e.WarmIPTarget),
		settings.MinIPTarget: strconv.Itoa(e.MinIPTarget), settings.WarmPrefixTarget: strconv.Itoa(e.WarmPrefixTarget),
		settings.PrefixDelegation: strconv.FormatBool(e.PrefixDelegation), settings.MaxENI: strconv.Itoa(e.MaxENI),
		settings.MaxPods: strconv.Itoa(e.MaxPods), settings.Cooldown: e.Cooldown.String(),
		settings.ReleaseDelay: e.ReleaseDelay.String(),
	}
}

// maybeRefill starts a detached `vpcctl reconcile` when the ADD left the pool
// under its target. The child takes the lock without waiting, so a burst of
// ADDs starts at most one pass that does work.
func (c *call) maybeRefill() {
	if !c.low || !c.cfg.backgroundReconcile() {
		return
	}
	self, err := os.Executable()
	if err != nil {
		return
	}
	cmd := exec.Command(self, "--state-dir", c.cfg.StateDir, "--log-level", "info", "reconcile", "--timeout", "2m", "--log-summary")
	cmd.Args[0] = "vpcctl"
	// Its log and its one-line summary go to the plugin's log file: nothing
	// reaches the runtime, whose stdout is the CNI result. The full report is
	// in the state file (pool status, events).
	if f, err := os.OpenFile(c.cfg.LogFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err == nil {
		cmd.Stdout, cmd.Stderr = f, f
		defer f.Close()
	}
	cmd.Env = os.Environ()
	for k, v := range storedValues(c.settings) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		c.log.Warn("background reconcile not started", "err", err)
		return
	}
	c.log.Info("background reconcile started", "child", cmd.Process.Pid) // "pid" is the plugin's own
	_ = cmd.Process.Release()
}
