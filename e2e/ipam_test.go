package e2e

import (
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/vishvananda/netlink"

	"vpc-cni/netns"
	"vpc-cni/pool"
	"vpc-cni/store"
)

// ipamConf is vpc-cni as the IPAM delegate of another interface plugin.
func (w *world) ipamConf() map[string]any {
	return map[string]any{"type": "vpc-cni", "stateDir": w.stateDir,
		"logFile": filepath.Join(w.stateDir, "plugin.log"), "backgroundReconcile": false}
}

// ptp and bridge with "ipam": {"type": "vpc-cni"} get pool addresses and
// give them back on DEL.
func TestPrivilegedIPAMDelegate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		plugin map[string]any
	}{
		{"ptp", map[string]any{"type": "ptp", "mtu": 1500}},
		{"bridge", map[string]any{"type": "bridge", "bridge": "cni-vpc0", "mtu": 1500}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, worldOpts{})
			tc.plugin["ipam"] = w.ipamConf()
			rt := w.runtime(conflist(tc.plugin))
			p := w.newPod(tc.name)
			res, err := rt.add(p, nil)
			if err != nil {
				t.Fatalf("ADD: %v", err)
			}
			ip := addrOf(t, res.IPs[0].Address.IP)
			a, ok := w.assignmentsByKey()[p.id+"/"+p.ifname]
			if !ok || a.IP != ip {
				t.Fatalf("store holds %+v for the pod, result has %s", a, ip)
			}
			if !w.simHolds(ip) {
				t.Fatalf("%s is not a secondary address EC2 gave the node", ip)
			}
			assertPodHasAddr(t, handleIn(t, p.ns), p.ifname, ip)
			if !w.hasRule(netns.PrioToPod, ip) {
				t.Errorf("no rule to %s lookup main prio 512 after the delegate ADD: %+v", ip, w.hostState().Rules)
			}
			if err := rt.check(p, nil); err != nil {
				t.Errorf("CHECK: %v", err)
			}
			if err := rt.del(p, nil); err != nil {
				t.Fatalf("DEL: %v", err)
			}
			if n := len(w.assignments()); n != 0 {
				t.Errorf("%d assignments after DEL", n)
			}
			if w.hasRule(netns.PrioToPod, ip) {
				t.Errorf("the 512 rule for %s survived DEL", ip)
			}
			if st := w.addrState(ip); st != pool.Cooling {
				t.Errorf("%s is %q after DEL, want cooling", ip, st)
			}
			w.checkStore()
		})
	}
}

func (w *world) hasRule(prio int, ip netip.Addr) bool {
	for _, r := range w.hostState().Rules {
		if r.Priority == prio && r.IP == ip {
			return true
		}
	}
	return false
}

// simHolds reports whether EC2 (the emulator) has ip on one of the node's ENIs.
func (w *world) simHolds(ip netip.Addr) bool {
	for _, e := range w.sim.State().ENIs {
		for _, s := range e.Secondary {
			if s == ip {
				return true
			}
		}
	}
	return false
}

// addrState is the pool state of ip in the store, "" if unknown.
func (w *world) addrState(ip netip.Addr) pool.State {
	var snap pool.Snapshot
	w.view(func(tx *store.Tx) (err error) { snap, err = tx.Snapshot(); return err })
	for _, e := range snap.ENIs {
		for _, b := range e.Blocks {
			for _, a := range b.Addrs {
				if a.IP == ip {
					return a.State
				}
			}
		}
	}
	return ""
}

func assertPodHasAddr(t *testing.T, h *netlink.Handle, ifname string, ip netip.Addr) {
	t.Helper()
	link, err := h.LinkByName(ifname)
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := h.AddrList(link, netlink.FAMILY_ALL)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if a.IP.Equal(ipOf(ip)) {
			return
		}
	}
	t.Errorf("pod %s has %v, want %s", ifname, addrs, ip)
}

// ptp and bridge (v1.10) do not forward GC to their IPAM (an upstream
// FIXME), so GC is sent to vpc-cni as an IPAM delegate directly, the way a
// forwarding plugin would: it releases the addresses of attachments the
// runtime no longer lists. STATUS is forwarded by ptp and answers.
func TestPrivilegedIPAMDelegateGCAndStatus(t *testing.T) {
	w := newWorld(t, worldOpts{})
	conf := map[string]any{"cniVersion": "1.1.0", "name": "vpc", "type": "ptp", "mtu": 1500, "ipam": w.ipamConf()}
	keep, stale := w.newPod("keep"), w.newPod("stale")
	for _, p := range []*pod{keep, stale} {
		resultOf(t, w.execInNode(bin("ptp"), p.env("ADD"), mustJSON(t, conf)))
	}
	if err := w.runtime(conflist(conf)).status(); err != nil {
		t.Errorf("STATUS through ptp: %v", err)
	}
	conf["cni.dev/valid-attachments"] = []map[string]string{{"containerID": keep.id, "ifname": keep.ifname}}
	gc := []string{"CNI_COMMAND=GC", "CNI_PATH=" + binDir}
	if r := w.execInNode(bin("vpc-cni"), gc, mustJSON(t, conf)); r.err != nil {
		t.Fatalf("GC: %v %s", r.err, r.stdout)
	}
	all := w.assignments()
	if len(all) != 1 || all[0].ContainerID != keep.id {
		t.Fatalf("after GC: %+v, want only %s", all, keep.id)
	}
	w.checkStore()
}
