package reconcile

import (
	"slices"
	"strings"
	"testing"

	"vpc-cni/cloud"
	"vpc-cni/pool"
	"vpc-cni/settings"
	"vpc-cni/sim/ec2sim"
)

// An adopted ENI that someone tags no_manage=true while pods hold its
// addresses becomes not ours: the pods keep their addresses until they are
// deleted, no pod gets a new one, its free addresses leave the pool without
// an EC2 call, the event says so, and passes that read only IMDS keep the
// class.
func TestENIThatBecomesNotOursKeepsItsPodsAddresses(t *testing.T) {
	n := newNode(t, "t3.small", env{settings.EC2ResyncInterval: "0"}) // every pass reads EC2
	user, err := n.sim.AddENI(ec2sim.ENISpec{Secondary: 3, Description: "user's"})
	if err != nil {
		t.Fatal(err)
	}
	n.converge(5)
	if e := eniOf(t, n.snapshot(), user.ID); e.Class != pool.Adopted || !e.Ready {
		t.Fatalf("the untagged ENI: %+v, want adopted and ready", e)
	}
	var onUser []string
	for range 6 { // the primary's 3, then the user's ENI's
		a, err := n.addPod()
		if err != nil {
			t.Fatal(err)
		}
		if a.ENIID == user.ID {
			onUser = append(onUser, a.Key)
		}
	}
	if len(onUser) < 2 {
		t.Fatalf("%d pods on the user's ENI, want at least 2", len(onUser))
	}
	cl := n.r.Cloud.(*cloud.Client)
	if err := cl.TagENI(ctxFor(t), user.ID, map[string]string{pool.TagNoManage: "true"}); err != nil {
		t.Fatal(err)
	}
	n.sim.ResetCounters()
	rep := n.pass()
	if !slices.ContainsFunc(rep.Findings, func(f Finding) bool {
		return f.Kind == "eni-class" && strings.Contains(f.Message, "keep them until they are deleted")
	}) {
		t.Fatalf("no eni-class finding saying the pods keep their addresses: %+v", rep.Findings)
	}
	e := eniOf(t, n.snapshot(), user.ID)
	if e.Class != pool.NotOurs || e.Why != "no_manage" || e.Ready || len(e.Blocks) != len(onUser) {
		t.Fatalf("after the tag: %+v, want not ours (no_manage), not ready, only the %d held blocks", e, len(onUser))
	}
	for _, a := range n.assignments() {
		if slices.Contains(onUser, a.Key) && a.ENIID != user.ID {
			t.Fatalf("pod %s lost its address on %s", a.Key, user.ID)
		}
	}
	for range 10 {
		a, err := n.addPod()
		if err == nil && a.ENIID == user.ID {
			t.Fatalf("a new pod got %s of the not-ours ENI", a.IP)
		}
		n.pass()
	}
	n.delPod(onUser[0])
	n.pass()
	if e := eniOf(t, n.snapshot(), user.ID); len(e.Blocks) != len(onUser)-1 {
		t.Fatalf("after one of its pods went: %d blocks, want %d", len(e.Blocks), len(onUser)-1)
	}
	for action, c := range n.sim.ENICalls(user.ID) {
		if !strings.HasPrefix(action, "Describe") {
			t.Fatalf("%d %s calls on the not-ours ENI", c, action)
		}
	}
	if got := len(n.sim.State().ENIs[1].Secondary); got != 3 {
		t.Fatalf("EC2 shows %d addresses on the user's ENI, want its 3", got)
	}
	delete(n.env, settings.EC2ResyncInterval) // the default: IMDS at rest
	n.pass()
	if rep := n.pass(); rep.Observed != FromIMDS {
		t.Fatalf("pass at rest read %q, want IMDS", rep.Observed)
	}
	if e := eniOf(t, n.snapshot(), user.ID); e.Class != pool.NotOurs {
		t.Fatalf("an IMDS pass lost the class: %+v", e)
	}
}

func eniOf(t *testing.T, s pool.Snapshot, id string) pool.ENI {
	t.Helper()
	for _, e := range s.ENIs {
		if e.ID == id {
			return e
		}
	}
	t.Fatalf("the store has no ENI %s", id)
	return pool.ENI{}
}
