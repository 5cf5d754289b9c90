package e2e

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"vpc-cni/cloud"
	"vpc-cni/internal/awsnode"
	"vpc-cni/plugin"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// A node vpc-cni served with two profiles, blue and red, then aws-node (which
// kept their ENIs and put a pod on each), is migrated back; the node now
// configures blue only. The dry run and the migration name both ENIs and
// both pods alike; each pod is recorded as its ENI's profile's, keeps its
// address, and no pass releases it; no pod without a profile is given an
// address of either ENI; a blue pod gets one of blue's; red's ENI gets no
// new pods and gives its free addresses back.
func TestPrivilegedMigrateLeavesProfileENIsToTheirProfiles(t *testing.T) {
	env := []string{"WARM_IP_TARGET=1", "IP_COOLDOWN_PERIOD=0", "RELEASE_DELAY=1", "PROFILE_BLUE_SNAT=node"}
	w := newWorld(t, worldOpts{instanceType: "t3.small", env: env, fresh: true}) // 3 ENIs x 3 secondary addresses
	st := w.sim.State()
	primary := refAssign(t, w, st.ENIs[0].ID, 2)
	blue, blueIPs := oldProfileENI(t, w, "blue", 1, 3)
	red, redIPs := oldProfileENI(t, w, "red", 2, 3)
	web, b0, r0 := refPod{w.newPod("web-0"), primary[0], 0}, refPod{w.newPod("b-0"), blueIPs[0], 2}, refPod{w.newPod("r-0"), redIPs[0], 3}
	pods := []refPod{web, b0, r0}
	for _, p := range pods {
		refWire(t, w, p)
	}
	checkpoint := refCheckpoint(t, awsnode.Version, pods...)
	says := []string{
		"ENI " + blue + " (device 1) carries vpc-cni.io/profile=blue: it is profile blue's, never the default pool's; it serves that profile's pods while its security groups are the profile's",
		"ENI " + red + " (device 2) carries vpc-cni.io/profile=red: it is profile red's, never the default pool's; this node does not configure that profile (no PROFILE_RED_* keys): it gets no new pods",
		"pod e2e/b-0 (" + b0.id + "/eth0) holds " + b0.ip.String() + " on ENI " + blue + " of profile blue, which aws-node gave it without any profile: it is recorded as profile blue's pod",
		"pod e2e/r-0 (" + r0.id + "/eth0) holds " + r0.ip.String() + " on ENI " + red + " of profile red",
	}

	dry := w.migrate(t, "--checkpoint", checkpoint, "--dry-run")
	assertFindings(t, "dry run", dry.Findings, says)
	if all, err := w.assignmentsOrNone(); err != nil || len(all) > 0 {
		t.Fatalf("the dry run changed the state: %v %v", all, err)
	}
	out := w.migrate(t, "--checkpoint", checkpoint)
	assertFindings(t, "migrate", out.Findings, dry.Findings)
	if countAdopted(out) != len(pods) || profileOf(out, b0.id) != "blue" || profileOf(out, r0.id) != "red" || profileOf(out, web.id) != "" {
		t.Errorf("migrate's pods: %+v", out.Pods)
	}
	w.checkStore()
	assertProfilePods(t, w, map[refPod][2]string{web: {st.ENIs[0].ID, ""}, b0: {blue, "blue"}, r0: {red, "red"}})
	w.view(func(tx *store.Tx) error {
		snap, err := tx.Snapshot()
		for _, e := range snap.ENIs {
			if want := map[string]string{blue: "blue", red: "red"}[e.ID]; string(e.Profile) != want {
				t.Errorf("ENI %s is in pool %q, want %q", e.ID, e.Profile, want)
			}
		}
		return err
	})

	assertNoDefaultPodOn(t, w, blue, red)
	conf := func(profile string) []byte {
		return mustJSON(t, w.conf(map[string]any{"runtimeConfig": map[string]any{
			plugin.PodAnnotationsCapability: map[string]string{settings.ProfileAnnotation: profile}}}))
	}
	got, _ := netip.AddrFromSlice(w.add(w.newPod("b-1"), conf("blue")).IPs[0].Address.IP.To4())
	if !slices.Contains(blueIPs[1:], got) {
		t.Errorf("a blue pod got %s, want one of blue's free %v", got, blueIPs[1:])
	}
	if e := cniError(t, w.cni("ADD", w.newPod("r-1"), conf("red"))); e.Code != 7 {
		t.Errorf("a red pod: code %d (%s), want 7", e.Code, e.Msg)
	}

	w.reconcileUntil(env, func() bool { return len(secondaryOf(w, red)) == 1 }, "red's free addresses were given back")
	assertProfilePods(t, w, map[refPod][2]string{web: {st.ENIs[0].ID, ""}, b0: {blue, "blue"}, r0: {red, "red"}})
	assertStillInEC2(t, w, pods)
	w.checkStore()
}

// refAssign has the reference assign n secondary addresses to eni.
func refAssign(t *testing.T, w *world, eni string, n int32) []netip.Addr {
	t.Helper()
	if _, err := refEC2(w).AssignPrivateIpAddresses(context.Background(), &ec2.AssignPrivateIpAddressesInput{
		NetworkInterfaceId: aws.String(eni), SecondaryPrivateIpAddressCount: aws.Int32(n)}); err != nil {
		t.Fatalf("AssignPrivateIpAddresses: %v", err)
	}
	return secondaryOf(w, eni)
}

// oldProfileENI is an ENI vpc-cni once made for profile on this node (its
// tags, description and the primary's groups), attached at device with n
// secondary addresses.
func oldProfileENI(t *testing.T, w *world, profile string, device, n int32) (string, []netip.Addr) {
	t.Helper()
	ctx, cl, st := context.Background(), refEC2(w), w.sim.State()
	tags := []ec2types.Tag{{Key: aws.String(cloud.TagInstanceID), Value: aws.String(st.InstanceID)},
		{Key: aws.String(settings.ProfileTag), Value: aws.String(profile)}}
	eni, err := cl.CreateNetworkInterface(ctx, &ec2.CreateNetworkInterfaceInput{
		SubnetId: aws.String(st.SubnetID), Description: aws.String(cloud.DescriptionPrefix + st.InstanceID),
		Groups: st.ENIs[0].Groups, SecondaryPrivateIpAddressCount: aws.Int32(n),
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeNetworkInterface, Tags: tags}},
	})
	if err != nil {
		t.Fatalf("CreateNetworkInterface: %v", err)
	}
	id := aws.ToString(eni.NetworkInterface.NetworkInterfaceId)
	if _, err := cl.AttachNetworkInterface(ctx, &ec2.AttachNetworkInterfaceInput{NetworkInterfaceId: aws.String(id),
		InstanceId: aws.String(st.InstanceID), DeviceIndex: aws.Int32(device)}); err != nil {
		t.Fatalf("AttachNetworkInterface: %v", err)
	}
	return id, secondaryOf(w, id)
}

func secondaryOf(w *world, eni string) []netip.Addr {
	for _, e := range w.sim.State().ENIs {
		if e.ID == eni {
			return e.Secondary
		}
	}
	return nil
}

func assertFindings(t *testing.T, what string, have, want []string) {
	t.Helper()
	all := strings.Join(have, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("%s: no finding says %q; findings:\n%s", what, w, all)
		}
	}
}

func profileOf(out migratedOut, id string) string {
	for _, p := range out.Pods {
		if strings.HasPrefix(p.Key, id+"/") {
			return p.Profile
		}
	}
	return "?"
}

// assertProfilePods: each pod is assigned its address on its ENI, in its
// profile ("" the default pool).
func assertProfilePods(t *testing.T, w *world, want map[refPod][2]string) {
	t.Helper()
	have := w.assignmentsByKey()
	for p, eniProfile := range want {
		a, ok := have[store.AssignmentKey(p.id, p.ifname)]
		if !ok || a.IP != p.ip || a.ENIID != eniProfile[0] || string(a.Profile) != eniProfile[1] {
			t.Errorf("%s: assignment %+v (found %v); want %s on %s, profile %q", p.name, a, ok, p.ip, eniProfile[0], eniProfile[1])
		}
	}
}

// assertNoDefaultPodOn: pods without a profile get the default pool's
// addresses until it is full (the primary ENI's three: the other ENI slots
// are the profiles'), and never one of the profile ENIs', whose free
// addresses are right there.
func assertNoDefaultPodOn(t *testing.T, w *world, enis ...string) {
	t.Helper()
	var theirs []netip.Addr
	for _, e := range enis {
		theirs = append(theirs, secondaryOf(w, e)...)
	}
	conf := mustJSON(t, w.conf(nil))
	for i, p := range w.newPods("plain", 3) {
		r := w.cni("ADD", p, conf)
		if i == 2 {
			if e := cniError(t, r); e.Code != 11 {
				t.Errorf("the third pod without a profile: code %d (%s), want 11 (the default pool is full)", e.Code, e.Msg)
			}
			continue
		}
		got, _ := netip.AddrFromSlice(resultOf(t, r).IPs[0].Address.IP.To4())
		if slices.Contains(theirs, got) {
			t.Errorf("pod %s without a profile got %s, an address of a profile ENI", p.name, got)
		}
	}
}

// reconcileUntil runs passes until done holds (a minute at most).
func (w *world) reconcileUntil(env []string, done func() bool, what string) {
	w.tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for !done() {
		if time.Now().After(deadline) {
			w.tb.Fatalf("after a minute of passes, not yet: %s", what)
		}
		w.reconcile(env...)
	}
}
