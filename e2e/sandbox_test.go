package e2e

import (
	"testing"

	"vpc-cni/internal/testsupport/testenv"
)

// The host veth's name is the pod's (namespace and name), not the
// sandbox's: a pod whose old sandbox went without a DEL (its namespace
// deleted by a runtime that then crashed) and whose new sandbox runs has
// one veth of that name, the new one's. Releasing the old sandbox's
// assignment, by vpcctl gc (its namespace is gone) or by the runtime's CNI
// GC (it is no valid attachment), must leave the new sandbox wired.
func TestPrivilegedReleasingAStaleSandboxKeepsThePodsNewerOne(t *testing.T) {
	for _, tc := range []struct {
		name    string
		release func(w *world, conf map[string]any, live *pod)
	}{
		{"vpcctl gc", func(w *world, _ map[string]any, _ *pod) {
			if r := w.vpcctl(nil, "gc"); r.err != nil {
				w.tb.Fatalf("vpcctl gc: %v\n%s%s", r.err, r.stdout, r.stderr)
			}
		}},
		{"the runtime's GC", func(w *world, conf map[string]any, live *pod) {
			conf["cni.dev/valid-attachments"] = []any{map[string]any{"containerID": live.id, "ifname": live.ifname}}
			env := []string{"CNI_COMMAND=GC", "CNI_PATH=" + binDir}
			if r := w.execInNode(bin("vpc-cni"), env, mustJSON(w.tb, conf)); r.err != nil {
				w.tb.Fatalf("GC: %v\n%s%s", r.err, r.stdout, r.stderr)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, worldOpts{instanceType: "t3.small", env: []string{"WARM_IP_TARGET=3", "IP_COOLDOWN_PERIOD=0"}})
			conf := w.conf(nil)
			old := w.newPod("web")
			oldIP := addrOf(t, w.add(old, mustJSON(t, conf)).IPs[0].Address.IP)
			testenv.DeleteNetNS(old.ns) // no DEL came
			now := w.newPod("web")      // the same pod's new sandbox, in a new namespace
			if now.hostVeth() != old.hostVeth() {
				t.Fatalf("the sandboxes' veths are %s and %s: the test needs one name", old.hostVeth(), now.hostVeth())
			}
			ip := addrOf(t, w.add(now, mustJSON(t, conf)).IPs[0].Address.IP)

			tc.release(w, conf, now)
			held := w.assignmentsByKey()
			if a, ok := held[old.id+"/eth0"]; ok {
				t.Errorf("the old sandbox still holds %s", a.IP)
			}
			a, ok := held[now.id+"/eth0"]
			if !ok || a.IP != ip {
				t.Fatalf("the new sandbox's assignment: %+v (found %v), want %s", a, ok, ip)
			}
			w.assertRunning([]*pod{now}, held)
			for _, r := range w.hostState().Routes {
				if r.IP == oldIP {
					t.Errorf("the old sandbox's route %s dev %s is left", r.IP, r.Veth)
				}
			}
		})
	}
}

// A veth says whose it is: a rebuild that finds a running pod the runtime
// has not cached yet (its ADD under way) restores it under its own
// container ID, so its DEL and the runtime's GC find it.
func TestPrivilegedRebuildNamesAnUncachedPodByItsVeth(t *testing.T) {
	w := newWorld(t, worldOpts{instanceType: "t3.small", env: []string{"WARM_IP_TARGET=3", "IP_COOLDOWN_PERIOD=0"}})
	conf := mustJSON(t, w.conf(nil))
	p := w.newPod("uncached")
	ip := addrOf(t, w.add(p, conf).IPs[0].Address.IP)
	w.loseState()
	r := w.vpcctl(nil, "state", "rebuild", "-o", "json", "--cni-cache-dir", t.TempDir())
	if r.err != nil {
		t.Fatalf("state rebuild: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	a, ok := w.assignmentsByKey()[p.id+"/eth0"]
	if !ok || a.IP != ip || a.Network != "vpc" {
		t.Fatalf("after the rebuild: %+v (found %v), want %s under %s/eth0 in network vpc; report %s", a, ok, ip, p.id, r.stdout)
	}
	w.del(p, conf)
	w.assertNodeClean()
}
