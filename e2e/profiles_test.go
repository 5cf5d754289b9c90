package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"vpc-cni/plugin"
	"vpc-cni/settings"
	"vpc-cni/sim/ec2sim"
)

// Two network profiles and the default pool on one node of a simulated VPC
// that enforces security groups: gold (its own group and subnet, SNAT to
// the node) and blue (its own group and subnet, SNAT none).
var (
	goldCIDR  = netip.MustParsePrefix("100.64.80.0/24")
	goldGW    = netip.MustParseAddr("100.64.80.1")
	blueCIDR  = netip.MustParsePrefix("100.64.96.0/24")
	blueGW    = netip.MustParseAddr("100.64.96.1")
	goldGroup = "sg-0aaaaaaaaaaaa0901"
	blueGroup = "sg-0aaaaaaaaaaaa0902"
)

func profilesVPC(t *testing.T, extra ...string) *vpcNet {
	return newVPCWorldPrepared(t, func(s *ec2sim.Sim) (map[string]netip.Addr, []string) {
		gold, err := s.AddSubnet(goldCIDR, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		blue, err := s.AddSubnet(blueCIDR, "", map[string]string{"tier": "blue"})
		if err != nil {
			t.Fatal(err)
		}
		return map[string]netip.Addr{gold: goldGW, blue: blueGW}, []string{
			"PROFILE_GOLD_SECURITY_GROUPS=" + goldGroup, "PROFILE_GOLD_SUBNETS=" + gold, "PROFILE_GOLD_WARM_IP_TARGET=2",
			"PROFILE_BLUE_SECURITY_GROUPS=" + blueGroup, "PROFILE_BLUE_SUBNETS=tag:tier=blue", "PROFILE_BLUE_SNAT=none",
			"PROFILE_BLUE_WARM_IP_TARGET=2",
		}
	}, append([]string{"WARM_IP_TARGET=2"}, extra...)...)
}

// profilePod adds a pod annotated with profile ("" none), the annotations
// passed as containerd passes them to a plugin that declares the capability.
func (v *vpcNet) profilePod(name, profile string) (*pod, netip.Addr) {
	v.w.tb.Helper()
	p := v.w.newPod(name)
	var extra map[string]any
	if profile != "" {
		extra = map[string]any{"runtimeConfig": map[string]any{
			plugin.PodAnnotationsCapability: map[string]string{settings.ProfileAnnotation: profile, "other": "x"}}}
	}
	res := v.w.add(p, mustJSON(v.w.tb, v.w.conf(extra)))
	ip, _ := netip.AddrFromSlice(res.IPs[0].Address.IP.To4())
	return p, ip
}

// ec2View is what a plain SDK client reads of the node's ENIs: for each
// address, its ENI's groups and profile tag.
type eniView struct {
	id, profile string
	groups      []string
}

func (v *vpcNet) ec2View(t *testing.T) map[netip.Addr]eniView {
	t.Helper()
	out, err := refEC2(v.w).DescribeNetworkInterfaces(context.Background(), &ec2.DescribeNetworkInterfacesInput{
		Filters: []types.Filter{{Name: aws.String("attachment.instance-id"), Values: []string{v.w.sim.State().InstanceID}}}})
	if err != nil {
		t.Fatal(err)
	}
	view := map[netip.Addr]eniView{}
	for _, e := range out.NetworkInterfaces {
		ev := eniView{id: aws.ToString(e.NetworkInterfaceId)}
		for _, g := range e.Groups {
			ev.groups = append(ev.groups, aws.ToString(g.GroupId))
		}
		for _, tag := range e.TagSet {
			if aws.ToString(tag.Key) == settings.ProfileTag {
				ev.profile = aws.ToString(tag.Value)
			}
		}
		for _, a := range e.PrivateIpAddresses {
			view[netip.MustParseAddr(aws.ToString(a.PrivateIpAddress))] = ev
		}
	}
	return view
}

func TestPrivilegedTwoProfilesAndTheDefaultPoolOnASimulatedVPC(t *testing.T) {
	v := profilesVPC(t)
	gold, goldIP := v.profilePod("gold-a", "gold")
	blue, blueIP := v.profilePod("blue-a", "blue")
	plain, plainIP := v.profilePod("plain-a", "")
	v.syncVPC()

	view := v.ec2View(t)
	for _, c := range []struct {
		name    string
		ip      netip.Addr
		cidr    netip.Prefix
		profile string
		group   string
	}{{"gold", goldIP, goldCIDR, "gold", goldGroup}, {"blue", blueIP, blueCIDR, "blue", blueGroup}} {
		e := view[c.ip]
		if !c.cidr.Contains(c.ip) || e.profile != c.profile || !slices.Equal(e.groups, []string{c.group}) {
			t.Fatalf("%s pod %s: on %s (profile %q, groups %v); want %s's subnet %s and groups [%s]",
				c.name, c.ip, e.id, e.profile, e.groups, c.profile, c.cidr, c.group)
		}
	}
	if e := view[plainIP]; e.profile != "" || slices.Contains(e.groups, goldGroup) || slices.Contains(e.groups, blueGroup) {
		t.Fatalf("the default pod %s is on %s (profile %q, groups %v)", plainIP, e.id, e.profile, e.groups)
	}
	for _, a := range v.w.assignments() {
		if want := map[netip.Addr]string{goldIP: "gold", blueIP: "blue", plainIP: ""}[a.IP]; string(a.Profile) != want {
			t.Fatalf("assignment of %s names profile %q, want %q", a.IP, a.Profile, want)
		}
	}

	// The client admits gold's group only: gold's pod reaches it through
	// gold's ENI with its own address; the others' packets are dropped.
	sees(t, gold.ns, clientIP, whoamiPort, goldIP)
	sees(t, plain.ns, clientIP, whoamiPort, plainIP) // before the rule: the VPC routes everyone
	v.allowOnly(clientIP, goldGroup)
	sees(t, gold.ns, clientIP, whoamiPort, goldIP)
	unreachable(t, plain.ns, clientIP, whoamiPort, "the client admits gold's group only")
	unreachable(t, blue.ns, clientIP, whoamiPort, "the client admits gold's group only")

	// Outside the VPC: gold (SNAT node) and the default pod leave as the
	// node; blue (SNAT none) keeps its address, through blue's ENI (the
	// VPC's source check drops it anywhere else), and so the internet host,
	// which answers only the node's address, does not answer it.
	sees(t, gold.ns, peeredIP, whoamiPort, v.primaryIP)
	sees(t, plain.ns, peeredIP, whoamiPort, v.primaryIP)
	sees(t, blue.ns, peeredIP, whoamiPort, blueIP)
	unreachable(t, blue.ns, internetIP, whoamiPort, "SNAT none keeps the pod's address, which the internet host does not answer")
	sees(t, gold.ns, internetIP, whoamiPort, v.primaryIP)

	for _, p := range []*pod{gold, blue, plain} {
		v.w.del(p, mustJSON(t, v.w.conf(nil))) // DEL without the annotation: the stored assignment decides
	}
	if got := v.w.assignments(); len(got) != 0 {
		t.Fatalf("assignments left: %+v", got)
	}
	v.w.checkStore()
}

// A pod that names a profile the node does not have fails with code 7 and
// takes nothing.
func TestPrivilegedAnUnknownProfileIsRefusedOnTheNode(t *testing.T) {
	v := profilesVPC(t)
	p := v.w.newPod("red-a")
	conf := v.w.conf(map[string]any{"runtimeConfig": map[string]any{
		plugin.PodAnnotationsCapability: map[string]string{settings.ProfileAnnotation: "red"}}})
	r := v.w.cni("ADD", p, mustJSON(t, conf))
	if e := cniError(t, r); e.Code != 7 {
		t.Fatalf("code %d (%s), want 7", e.Code, e.Msg)
	}
	if got := v.w.assignments(); len(got) != 0 {
		t.Fatalf("the refused ADD took %+v", got)
	}
}

// A profile's pods beyond its warm addresses get theirs from a grow inside
// their ADD, on the profile's ENI; a profile with no ENI slot left on the
// node fails its pods with code 11 naming the pool and the limit.
func TestPrivilegedAProfilePoolGrowsInsideTheAddOrSaysWhyNot(t *testing.T) {
	// gold, blue and the primary take the t3.medium's 3 ENIs; red gets none
	// (WARM_ENI_TARGET=0 keeps it from asking before a pod does).
	v := profilesVPC(t, "PROFILE_RED_SECURITY_GROUPS=sg-0aaaaaaaaaaaa0903", "PROFILE_RED_WARM_ENI_TARGET=0")
	var goldIPs []netip.Addr
	for i := range 5 {
		_, ip := v.profilePod(fmt.Sprintf("gold-%d", i), "gold")
		goldIPs = append(goldIPs, ip)
	}
	view := v.ec2View(t)
	for _, ip := range goldIPs {
		if e := view[ip]; !goldCIDR.Contains(ip) || e.profile != "gold" {
			t.Fatalf("gold pod %s on %s (profile %q)", ip, e.id, e.profile)
		}
	}
	p := v.w.newPod("red-0")
	conf := v.w.conf(map[string]any{"runtimeConfig": map[string]any{
		plugin.PodAnnotationsCapability: map[string]string{settings.ProfileAnnotation: "red"}}})
	e := cniError(t, v.w.cni("ADD", p, mustJSON(t, conf)))
	if e.Code != 11 || !strings.Contains(e.Msg, "profile red's pool") || !strings.Contains(e.Msg, "ENI") {
		t.Fatalf("red's pod: code %d %q; want 11 naming red's pool and the ENI limit", e.Code, e.Msg)
	}
}
