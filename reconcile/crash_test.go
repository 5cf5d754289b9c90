package reconcile

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/store"
)

// Environment of the helper process the crash tests kill.
const (
	envHelper   = "VPC_CNI_TEST_HELPER"
	envStateDir = "VPC_CNI_TEST_STATE_DIR"
	envNow      = "VPC_CNI_TEST_NOW"
	envCrashAt  = "VPC_CNI_TEST_CRASH_AT" // the checkpoint the helper dies at
)

// crashAt makes the helper process SIGKILL itself at checkpoint cp.
func crashAt(cp string) func(string) {
	return func(name string) {
		if name == cp {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}
}

// TestHelperReconcile is not a test: the crash tests re-exec the test binary
// to run it as a process that SIGKILLs itself at the checkpoint envCrashAt names.
func TestHelperReconcile(t *testing.T) {
	if os.Getenv(envHelper) != "1" {
		t.Skip("helper process for the crash tests")
	}
	now, err := time.Parse(time.RFC3339Nano, os.Getenv(envNow))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(os.Getenv(envStateDir), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := cloud.New(context.Background(), cloud.Options{MaxBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	cp := os.Getenv(envCrashAt)
	checkpointHook = crashAt(cp)
	r := &Runner{Store: st, Cloud: cl, Host: readyHost{}, Env: os.LookupEnv, Now: func() time.Time { return now }}
	rep, err := r.Run(context.Background(), Options{})
	t.Fatalf("the pass was not killed at %q: err %v, calls %v", cp, err, rep.Calls)
}

// A pass killed at any step leaves the next one what it needs: after one
// pass nothing is leaked, nothing owned twice, and the store equals EC2.
func TestCrashAtEachStep(t *testing.T) {
	cases := []struct {
		name, at string
		setup    func(*node)
		leftover func(t *testing.T, n *node) // what the dead pass left in EC2
	}{
		{"create before attach", cpCreated, needENI, wantDetachedENI},
		{"attach before commit", cpAttached, needENI, wantUnknownENI},
		{"all calls before commit", cpExecuted, needENI, wantUnknownENI},
		{"assign before commit", cpAssigned, needAssign, wantUnknownAddrs},
		{"release marked before unassign", cpPlanned, needUnassign, nil},
		{"unassign before commit", cpUnassigned, needUnassign, wantMissingAddrs},
		{"detach before delete", cpDetached, needDelete, wantDetachedENI},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := newNode(t, "t3.small", env{"IP_COOLDOWN_PERIOD": "1s", "RELEASE_DELAY": "2s"})
			c.setup(n)
			killedAt(t, n, c.at)
			if c.leftover != nil {
				c.leftover(t, n)
			}
			var intents []store.Intent
			_ = n.st.View(func(tx *store.Tx) (err error) { intents, err = tx.Intents(); return err })
			if len(intents) == 0 {
				t.Fatalf("the killed pass left no intent")
			}
			n.clock.Advance(time.Second)
			rep := n.pass()
			t.Logf("repair pass: calls %v, findings %v", rep.Calls, rep.Findings)
			checkAgrees(t, n.sim, n.st)
			n.converge(5)
			checkAgrees(t, n.sim, n.st)
			for _, e := range n.sim.State().ENIs {
				if e.DeviceIndex > 0 && !e.DeleteOnTermination {
					t.Errorf("ENI %s attached without delete-on-termination", e.ID)
				}
			}
		})
	}
}

// killedAt runs one pass in a child process that SIGKILLs itself at cp.
func killedAt(t *testing.T, n *node, cp string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperReconcile$", "-test.count=1")
	cmd.Env = append(os.Environ(), envHelper+"=1", envCrashAt+"="+cp,
		envStateDir+"="+n.st.Dir(), envNow+"="+n.clock.Now().Format(time.RFC3339Nano))
	for k, v := range n.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("helper was not killed at %s: %v\n%s", cp, err, out)
	}
}

// needENI: the primary ENI is full and a pod arrived, so the next pass creates an ENI.
func needENI(n *node) {
	n.env["WARM_ENI_TARGET"] = "1"
	n.converge(5)
	if _, err := n.addPod(); err != nil {
		n.t.Fatal(err)
	}
}

// needAssign: one address, taken by a pod, so the next pass assigns one.
func needAssign(n *node) {
	n.env["WARM_IP_TARGET"], n.env["MINIMUM_IP_TARGET"] = "1", "1"
	n.converge(5)
	if _, err := n.addPod(); err != nil {
		n.t.Fatal(err)
	}
}

// needUnassign: three free addresses, the target drops to one, and the
// excess has lasted the release delay, so the next pass unassigns two.
func needUnassign(n *node) {
	n.env["WARM_IP_TARGET"], n.env["MINIMUM_IP_TARGET"] = "3", "1"
	n.converge(5)
	n.env["WARM_IP_TARGET"] = "1"
	n.pass() // notes the excess
	n.clock.Advance(3 * time.Second)
}

// needDelete: a second ENI with free addresses only, which the next pass deletes.
func needDelete(n *node) {
	n.env["WARM_IP_TARGET"], n.env["MINIMUM_IP_TARGET"] = "5", "1"
	n.converge(5)
	n.env["WARM_IP_TARGET"] = "1"
	n.pass()
	n.clock.Advance(3 * time.Second)
}

func wantDetachedENI(t *testing.T, n *node) {
	for _, e := range n.sim.State().ENIs {
		if e.DeviceIndex < 0 {
			return
		}
	}
	t.Fatalf("the killed pass left no detached ENI in EC2: %+v", n.sim.State().ENIs)
}

func wantUnknownENI(t *testing.T, n *node) {
	known := map[string]bool{}
	for _, e := range n.snapshot().ENIs {
		known[e.ID] = true
	}
	for _, e := range n.sim.State().ENIs {
		if !known[e.ID] && e.DeviceIndex > 0 {
			return
		}
	}
	t.Fatalf("the killed pass left no attached ENI unknown to the store")
}

func wantUnknownAddrs(t *testing.T, n *node) {
	if _, addrs := simHeld(n.sim); addrs <= storeAddrs(n) {
		t.Fatalf("EC2 holds %d addresses, the store %d; want EC2 ahead", addrs, storeAddrs(n))
	}
}

func wantMissingAddrs(t *testing.T, n *node) {
	if _, addrs := simHeld(n.sim); addrs >= storeAddrs(n) {
		t.Fatalf("EC2 holds %d addresses, the store %d; want the store ahead", addrs, storeAddrs(n))
	}
}

func storeAddrs(n *node) int {
	c := 0
	for _, e := range n.snapshot().ENIs {
		for _, b := range e.Blocks {
			c += len(b.Addrs)
		}
	}
	return c
}
