package reconcile

import (
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"vpc-cni/cloud"
	"vpc-cni/pool"
	"vpc-cni/settings"
	"vpc-cni/sim/ec2sim"
	"vpc-cni/store"
)

// A node's state pointed at an endpoint (a
// second emulator) that does not know the instance. The pass fails with a
// message naming the likely causes, state.db is byte for byte unchanged, and
// the refusal is recorded beside it for status and doctor.
func TestUnknownEndpointChangesNothing(t *testing.T) {
	n := newNode(t, "t3.small", env{"WARM_IP_TARGET": "2"})
	n.converge(5)
	if _, err := n.addPod(); err != nil {
		t.Fatal(err)
	}
	// Another emulator, which knows another instance; EC2 now points at it
	// (IMDS still says this is the node: a pass sets a file IMDS disowns aside).
	other := startSimConfig(t, ec2sim.Config{InstanceType: "t3.small", InstanceID: "i-0fedcba9876543210"})
	m := attachNode(t, other, n.st.Dir(), env{"WARM_IP_TARGET": "2", settings.EC2ResyncInterval: "0"}) // reads EC2 at once
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", n.sim.URL())
	before, err := os.ReadFile(m.st.Path())
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.r.Run(ctxFor(t), Options{})
	if !IsIdentityError(err) {
		t.Fatalf("the pass against an endpoint that does not know the node: %v, want an identity error", err)
	}
	for _, want := range []string{"lacks its primary ENI", "wrong region", "another account", "AWS_ENDPOINT_URL_EC2", "changed nothing"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	after, rerr := os.ReadFile(m.st.Path())
	if rerr != nil {
		t.Fatal(rerr)
	}
	if string(after) != string(before) {
		t.Errorf("the refused pass changed %s", m.st.Path())
	}
	refused, ok, rerr := m.st.RefusedPass()
	if rerr != nil || !ok || refused.Cause != "identity" || refused.Error != err.Error() {
		t.Errorf("refused pass record %+v (present %v, %v), want cause identity and the pass's error", refused, ok, rerr)
	}
}

// The identity check is a pure function of the answer and the node: each
// contradiction is refused, a consistent answer passes.
func TestVetTruth(t *testing.T) {
	node := store.Node{InstanceID: "i-1", Region: "eu-west-1", VPCID: "vpc-1", PrimaryENI: "eni-p", PrimaryMAC: "02:00:00:00:00:01"}
	primary := cloud.ENIInfo{ID: "eni-p", VPCID: "vpc-1", MAC: "02:00:00:00:00:01", Attached: true, DeviceIndex: 0}
	other := cloud.ENIInfo{ID: "eni-2", VPCID: "vpc-1", Attached: true, DeviceIndex: 1}
	with := func(f func(*cloud.ENIInfo)) cloud.ENIInfo { p := primary; f(&p); return p }
	cases := []struct {
		name  string
		truth []cloud.ENIInfo
		says  string // "" means accepted
	}{
		{"consistent", []cloud.ENIInfo{primary, other}, ""},
		{"empty list", nil, "lacks its primary ENI eni-p"},
		{"primary missing", []cloud.ENIInfo{other}, "lacks its primary ENI"},
		{"another VPC", []cloud.ENIInfo{primary, with(func(e *cloud.ENIInfo) { e.ID, e.VPCID, e.DeviceIndex = "eni-x", "vpc-9", 1 })}, "of VPC vpc-9"},
		{"primary detached", []cloud.ENIInfo{with(func(e *cloud.ENIInfo) { e.Attached = false })}, "primary ENI eni-p"},
		{"primary's MAC differs", []cloud.ENIInfo{with(func(e *cloud.ENIInfo) { e.MAC = "02:00:00:00:00:99" })}, "MAC"},
	}
	for _, c := range cases {
		err := vetTruth(node, c.truth)
		switch {
		case c.says == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.says != "" && (!IsIdentityError(err) || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), "eu-west-1")):
			t.Errorf("%s: %v, want an identity error saying %q and the node's region", c.name, err, c.says)
		}
	}
}

// One list that lacks a pod's block is not enough: without EC2's
// confirmation Merge keeps it (and says so); with it Merge drops it and the
// finding names the evidence. A block no pod holds goes on the list alone.
func TestMergeDropsHeldOnlyWithEvidence(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	heldCIDR, freeCIDR := netip.MustParsePrefix("100.64.0.10/32"), netip.MustParsePrefix("100.64.0.11/32")
	heldBlock := NewBlock(heldCIDR, now)
	heldBlock.Addrs[0].State, heldBlock.Addrs[0].Owner = pool.Assigned, "pod/eth0"
	snap := pool.Snapshot{ENIs: []pool.ENI{{ID: "eni-p", DeviceIndex: 0, Blocks: []pool.Block{heldBlock, NewBlock(freeCIDR, now)}},
		{ID: "eni-2", DeviceIndex: 1, Blocks: []pool.Block{heldBlock}}}}
	truth := []cloud.ENIInfo{{ID: "eni-p", Attached: true, DeviceIndex: 0}} // lacks both blocks and eni-2

	if got := heldMissing(snap, truth, Evidence{}); strings.Join(got, ",") != "eni-p,eni-2" {
		t.Errorf("heldMissing %v, want eni-p,eni-2", got)
	}
	merged, found := Merge(snap, truth, Evidence{}, now, ClassRules{ManageUntagged: true})
	if len(merged.ENIs) != 2 || len(merged.ENIs[0].Blocks) != 1 || merged.ENIs[0].Blocks[0].CIDR != heldCIDR {
		t.Errorf("without evidence: %+v, want eni-p with the held block only, and eni-2 kept", merged.ENIs)
	}
	if !hasFinding(found, "kept-block", heldCIDR.String()) || !hasFinding(found, "kept-eni", "eni-2") ||
		!hasFinding(found, "dropped-block", "no pod holds it") {
		t.Errorf("findings without evidence: %+v", found)
	}

	ev := Evidence{ENIs: map[string]string{"eni-2": "DescribeNetworkInterfaces by ID answered NotFound"},
		Blocks: map[netip.Prefix]string{heldCIDR: "DescribeNetworkInterfaces by ID says the ENI no longer holds it"}}
	merged, found = Merge(snap, truth, ev, now, ClassRules{ManageUntagged: true})
	if len(merged.ENIs) != 1 || len(merged.ENIs[0].Blocks) != 0 {
		t.Errorf("with evidence: %+v, want eni-p without blocks", merged.ENIs)
	}
	if !hasFinding(found, "dropped-eni", "answered NotFound") || !hasFinding(found, "dropped-block", "no longer holds it") ||
		!hasFinding(found, "lost-assignment", "pod/eth0") {
		t.Errorf("findings with evidence: %+v", found)
	}
}

func hasFinding(found []Finding, kind, text string) bool {
	for _, f := range found {
		if f.Kind == kind && strings.Contains(f.Message, text) {
			return true
		}
	}
	return false
}

// Against the emulator: a secondary ENI holding a pod, detached behind the
// store's back. The pass asks EC2 about it by ID before it drops it, and the
// event says what EC2 answered.
func TestDetachedENIDroppedWithEvidence(t *testing.T) {
	n := newNode(t, "t3.small", env{"WARM_IP_TARGET": "8"})
	n.converge(5)
	snap := n.snapshot()
	if len(snap.ENIs) < 2 {
		t.Fatalf("want a secondary ENI, have %s", n.storeSummary())
	}
	second := snap.ENIs[1]
	var pod store.Assignment
	for i := 0; i < 8; i++ { // fill until a pod lands on the secondary ENI
		a, err := n.addPod()
		if err != nil {
			t.Fatal(err)
		}
		if a.ENIID == second.ID {
			pod = a
			break
		}
	}
	if pod.Key == "" {
		t.Fatal("no pod landed on the secondary ENI")
	}
	api, ctx := rawEC2(t), ctxFor(t)
	out, err := api.DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{NetworkInterfaceIds: []string{second.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.DetachNetworkInterface(ctx, &ec2.DetachNetworkInterfaceInput{
		AttachmentId: out.NetworkInterfaces[0].Attachment.AttachmentId, Force: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	rep := n.pass()
	if !hasFinding(rep.Findings, "dropped-eni", "by ID says it is") || !hasFinding(rep.Findings, "lost-assignment", pod.Key) {
		t.Errorf("findings %+v: want the ENI dropped on EC2's by-ID answer, and the pod's address lost", rep.Findings)
	}
}
