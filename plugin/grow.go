package plugin

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/containernetworking/cni/pkg/types"

	"vpc-cni/internal/logfile"
	"vpc-cni/internal/nice"
	"vpc-cni/pool"
	"vpc-cni/rebuild"
	"vpc-cni/reconcile"
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
	if rebuilt, err := c.recoverLost(); err != nil {
		return store.Assignment{}, "", err
	} else if rebuilt {
		if a, err := c.takeOnce(want); !errors.Is(err, store.ErrNoFreeAddress) {
			return a, "", err
		}
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
	// No special case for MINIMUM_IP_TARGET alone: this ADD is registered as
	// waiting, and the pass grows for waiting pods under every rule.
	rep, _, _, err := rebuild.Pass(c.ctx, c.store, rebuild.PassOptions{Options: c.rebuildOptions(),
		Pass: reconcile.Options{GrowOnly: true, LinkWait: c.linkWait()}})
	if rep == nil {
		rep = &reconcile.Report{}
	}
	c.log.Info("inline grow", "calls", rep.Calls, "actions", rep.Plan.Actions, "figures", rep.Plan.Figures,
		"failed", rep.Failed, "took", rep.Duration, "err", err)
	if err != nil {
		return true, "inline grow failed: " + err.Error()
	}
	return true, whyNoGrowth(rep, c.pool.Config.Profile)
}

// linkWait is how long the grow pass may wait for a new ENI's late link: up
// to the ADD's deadline, less what taking the address and wiring the pod need
// after it (a second, or a quarter of what is left on a short deadline).
func (c *call) linkWait() time.Time {
	deadline, ok := c.ctx.Deadline()
	if !ok {
		return time.Time{}
	}
	return deadline.Add(-min(time.Second, time.Until(deadline)/4))
}

func (c *call) runner() (*reconcile.Runner, error) {
	runner, err := reconcile.NewRunner(c.ctx, c.store, c.cfg.knobInputs(), "vpc-cni-plugin")
	if runner != nil {
		runner.Log = c.log
	}
	return runner, err
}

// rebuildOptions are how this ADD rebuilds a lost state file.
func (c *call) rebuildOptions() rebuild.Options {
	return rebuild.Options{CNICacheDir: c.cfg.CNICacheDir, NewRunner: c.runner, ListHost: c.listHost,
		VethPrefix: c.wiringKnobs().VethPrefix}
}

// recoverLost rebuilds a lost state file before the pool is grown: an
// inline grow on a fresh store would adopt every address EC2 lists as free
// and hand a running pod's to this one. The caller holds the reconcile lock;
// on a store with a pool it costs one read transaction. Rebuilding within
// the ADD costs what the grow's own adoption of a fresh node would (IMDS,
// the instance, its ENIs) plus a kernel read, so pods keep starting; if it
// fails the ADD fails with code 5 and nothing is handed out.
func (c *call) recoverLost() (bool, error) {
	out, lost, err := rebuild.Recover(c.ctx, c.store, c.rebuildOptions())
	if err != nil && lost.Pods > 0 {
		return false, types.NewError(types.ErrIOFailure, lost.Message()+"; rebuilding it in this ADD failed: "+err.Error(), "")
	}
	if err != nil {
		return false, storeErr("looking for lost state", err)
	}
	if out != nil {
		c.log.Warn("state lost: rebuilt from EC2 and the kernel", "pods", lost.Pods, "restored", out.Restored(),
			"failed", out.Failed, "calls", out.Calls)
	}
	return out != nil, nil
}

// whyNoGrowth says why a grow pass left no address for this ADD when the
// node is not full (noAddress judges fullness first): its failed calls, or
// the figures of the ADD's pool (another ADD of the burst took what it got).
func whyNoGrowth(rep *reconcile.Report, p pool.Pool) string {
	if len(rep.Failed) > 0 {
		return strings.Join(rep.Failed, "; ")
	}
	f := rep.Plan.Figures
	for _, plan := range rep.Profiles {
		if plan.Figures.Profile == p {
			f = plan.Figures
		}
	}
	return fmt.Sprintf("the grow pass left none for this pod (%d free, %d assigned, %d cooling, %d waiting)",
		f.Free, f.Assigned, f.Cooling, f.Waiting)
}

// maybeRefill starts a detached `vpcctl reconcile` when the ADD left the pool
// under its target and claimed the refill (store.TakeForPod): a burst starts
// one child, not one per ADD. The child waits for the lock, so an ADD made
// while another pass runs still gets its pass after that one.
func (c *call) maybeRefill() {
	if !c.startRefill || !c.cfg.backgroundReconcile() {
		return
	}
	self, err := os.Executable()
	if err != nil {
		return
	}
	args := []string{"vpcctl", "--state-dir", c.cfg.StateDir, "--log-level", "info", "--log-format", c.cfg.LogFormat}
	if c.cfg.ConfigFile != "" {
		args = append(args, "--config", c.cfg.ConfigFile) // else it finds the same file as we did
	}
	args = append(args, "reconcile", "--wait", "--refill", "--timeout", refillTimeout.String(), "--log-summary")
	files, closeFiles, err := refillFiles(c.cfg.LogFile)
	if err != nil {
		c.log.Warn("background reconcile not started", "err", err)
		return
	}
	defer closeFiles()
	// Kubelet's environment, as ours: the child resolves the knobs as we do.
	pid, err := nice.Start(self, args, os.Environ(), files, RefillNice)
	if pid == 0 {
		c.log.Warn("background reconcile not started", "err", err)
		return
	}
	if err != nil {
		c.log.Warn("background reconcile not reniced (it renices itself)", "child", pid, "err", err)
	}
	c.log.Info("background reconcile started", "child", pid) // "pid" is the plugin's own
}

// refillFiles are the refill's stdin, stdout and stderr: its log and its
// one-line summary go to the plugin's log file, so nothing reaches the
// runtime, whose stdout is the CNI result (the full report is in the state
// file: pool status, events). Without a log file, /dev/null.
func refillFiles(logFile string) (files []uintptr, closeAll func(), err error) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		return nil, nil, err
	}
	files = []uintptr{null.Fd(), null.Fd(), null.Fd()}
	f, err := logfile.Open(logFile) // rotated by size, as the plugin's own
	if err != nil {
		return files, func() { null.Close() }, nil
	}
	files[1], files[2] = f.Fd(), f.Fd()
	return files, func() { f.Close(); null.Close() }, nil
}

// refillTimeout bounds the detached pass, its wait for the lock included:
// the refill claim lapses then (store.RefillClaimTTL).
const refillTimeout = store.RefillClaimTTL

// RefillNice is the background refill's nice value. It is background work:
// the pool still has addresses (the ADD that started it took one), and at
// full priority it takes the CPU from the very ADDs of the burst it serves.
// A pass is mostly waiting on EC2, so a lower share delays it little. The
// plugin nices the child once it has exec'd (nice.Start), and the child,
// `reconcile --refill`, every thread of its own (nice.Self).
const RefillNice = 10
