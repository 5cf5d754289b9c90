package e2e

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"

	"vpc-cni/plugin"
	"vpc-cni/settings"
)

// A profile bound to a namespace on the node (PROFILE_GOLD_NAMESPACES),
// driven by libcni as containerd drives the shipped conflist: a pod of
// another namespace asking for it fails its ADD with code 7 naming the
// profile and its namespace, and nothing changes; a pod of the namespace
// gets the profile's address.
func TestPrivilegedAProfileBoundToANamespaceRefusesAnotherNamespacesPod(t *testing.T) {
	// blue, bound to nothing, holds no ENI (a warm target of 0).
	w := newWorld(t, worldOpts{env: []string{"WARM_IP_TARGET=1", "PROFILE_GOLD_WARM_IP_TARGET=1", "PROFILE_GOLD_NAMESPACES=team-a",
		"PROFILE_BLUE_WARM_ENI_TARGET=0"}})
	entry := w.conf(map[string]any{"capabilities": map[string]bool{plugin.PodAnnotationsCapability: true}})
	rt := w.runtime(conflist(entry))
	caps := map[string]any{plugin.PodAnnotationsCapability: map[string]string{settings.ProfileAnnotation: "gold"}}

	intruder := w.newPod("intruder")
	intruder.namespace = "other"
	state, sim := w.stateHash(), w.sim.State()
	_, err := rt.add(intruder, caps)
	var e *types.Error
	if !errors.As(err, &e) || e.Code != types.ErrInvalidNetworkConfig {
		t.Fatalf("the other namespace's ADD: %v; want code 7", err)
	}
	for _, part := range []string{"vpc-cni.io/profile=gold", "profile gold", "namespace other", "PROFILE_GOLD_NAMESPACES"} {
		if !strings.Contains(e.Msg, part) {
			t.Errorf("the refusal %q does not name %q", e.Msg, part)
		}
	}
	if strings.Contains(e.Msg, "team-a") {
		t.Errorf("the refusal tells the pod which namespace gold is for: %q", e.Msg)
	}
	if w.stateHash() != state || !reflect.DeepEqual(w.sim.State(), sim) || len(w.assignments()) != 0 {
		t.Fatalf("the refused ADD changed the node: assignments %+v", w.assignments())
	}

	member := w.newPod("member")
	member.namespace = "team-a"
	res, err := rt.add(member, caps)
	if err != nil {
		t.Fatalf("team-a's ADD: %v", err)
	}
	a := w.assignments()
	if len(a) != 1 || a[0].Profile != "gold" || !res.IPs[0].Address.IP.Equal(a[0].IP.AsSlice()) {
		t.Fatalf("team-a's pod got %v, assignments %+v; want gold's address", res.IPs, a)
	}
	w.assertOnlyBlueIsOpen(t)
	if err := rt.del(member, caps); err != nil {
		t.Fatalf("DEL: %v", err)
	}
}

// doctor and pool status, through the shipped vpcctl, say that any pod
// may pick blue, and not gold, which is bound to team-a.
func (w *world) assertOnlyBlueIsOpen(t *testing.T) {
	t.Helper()
	var rep []struct{ Check, Detail string }
	if err := json.Unmarshal(w.vpcctl(nil, "doctor", "-o", "json").stdout, &rep); err != nil {
		t.Fatalf("doctor -o json: %v", err)
	}
	i := slices.IndexFunc(rep, func(f struct{ Check, Detail string }) bool { return f.Check == "profile trust" })
	if i < 0 || !strings.Contains(rep[i].Detail, "any pod may pick the network profile blue") || strings.Contains(rep[i].Detail, "gold") {
		t.Errorf("doctor: %+v; want a warning naming blue alone", rep)
	}
	r := w.vpcctl(nil, "pool", "status")
	if r.err != nil || !strings.Contains(string(r.stdout), "any pod may pick it: no PROFILE_BLUE_NAMESPACES") ||
		strings.Contains(string(r.stdout), "no PROFILE_GOLD_NAMESPACES") {
		t.Errorf("pool status (%v):\n%s%s", r.err, r.stdout, r.stderr)
	}
}
