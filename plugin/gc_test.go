package plugin

import (
	"testing"

	"github.com/containernetworking/cni/pkg/types"

	"vpc-cni/netns"
	"vpc-cni/pool"
	"vpc-cni/store"
)

func valid(ids ...string) map[string]any {
	var v []any
	for _, id := range ids {
		v = append(v, map[string]any{"containerID": id, "ifname": "eth0"})
	}
	return map[string]any{"cni.dev/valid-attachments": v}
}

// GC releases what the runtime no longer lists, in this network only.
func TestGCReleasesAttachmentsTheRuntimeNoLongerLists(t *testing.T) {
	n := newTestNode(t).seed(twoENIs, eni(0, "100.64.0.10", "100.64.0.11"), eni(1, "100.64.1.10"))
	n.add("keep")
	n.add("stale")
	n.update(func(tx *store.Tx) error { // another network's attachment on the same pool
		_, err := tx.Take(store.Assignment{Key: "other/eth0", Network: "other-net"}, n.now(), pool.Config{})
		return err
	})
	if _, err := n.run("GC", n.args("", n.conf("1.1.0", valid("keep")))); err != nil {
		t.Fatal(err)
	}
	if _, ok := n.assignment("stale/eth0"); ok || n.state("100.64.0.11") != pool.Cooling {
		t.Fatalf("stale attachment not released: .11 %s", n.state("100.64.0.11"))
	}
	want := netns.Pod{NetnsPath: n.netns, IfName: "eth0", HostVeth: netns.HostVethNameFor("default", "stale", "stale"), IP: ipOf("100.64.0.11"),
		Sandbox: netns.Sandbox{Network: "vpc", ContainerID: "stale", IfName: "eth0"}}
	if len(n.host.torn) != 1 || n.host.torn[0] != want {
		t.Fatalf("tore down %+v, want only %+v", n.host.torn, want)
	}
	if _, ok := n.assignment("keep/eth0"); !ok {
		t.Fatal("GC released a valid attachment")
	}
	if _, ok := n.assignment("other/eth0"); !ok || n.state("100.64.1.10") != pool.Assigned {
		t.Fatal("GC released another network's attachment")
	}
}

// GC keeps going past a failure and names every attachment it could not
// release; those stay assigned for the next GC.
func TestGCReportsWhatItCouldNotTearDown(t *testing.T) {
	n := newTestNode(t).seed(twoENIs, eni(0, "100.64.0.10", "100.64.0.11"))
	n.add("a")
	n.add("b")
	n.host.fail["TeardownPod"] = errKernel
	_, err := n.run("GC", n.args("", n.conf("1.1.0", valid())))
	wantCode(t, err, types.ErrInternal, "gc: a/eth0: "+errKernel.Error()+"; b/eth0: ")
	if _, ok := n.assignment("a/eth0"); !ok || n.state("100.64.0.10") != pool.Assigned {
		t.Fatal("GC released an attachment it could not tear down")
	}
}

func TestGCAsIPAMDelegateClearsTheRules(t *testing.T) {
	n := newTestNode(t).seed(twoENIs, eni(0), eni(1, "100.64.1.10", "100.64.1.11"))
	for _, id := range []string{"a", "b"} {
		if _, err := n.run("ADD", n.args(id, n.ipamConf("1.1.0", nil))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := n.run("GC", n.args("", n.ipamConf("1.1.0", valid("b")))); err != nil {
		t.Fatal(err)
	}
	if _, ok := n.host.rules[ipOf("100.64.1.10")]; ok || n.host.rules[ipOf("100.64.1.11")] != 2 || len(n.host.torn) != 0 {
		t.Fatalf("rules after GC %v, teardowns %v", n.host.rules, n.host.torn)
	}
	n.host.fail["ClearPodRules"] = errKernel
	_, err := n.run("GC", n.args("", n.ipamConf("1.1.0", valid())))
	wantCode(t, err, types.ErrInternal, "b/eth0")
	if n.state("100.64.1.11") != pool.Assigned {
		t.Fatal("released although its rules stayed")
	}
}

func TestGCOnANodeNeverReconciledHasNothingToDo(t *testing.T) {
	n := newTestNode(t)
	if _, err := n.run("GC", n.args("", n.conf("1.1.0", valid()))); err != nil {
		t.Fatal(err)
	}
}
