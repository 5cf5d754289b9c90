package pool

import (
	"net/netip"
	"testing"
	"time"
)

// customNetworking starts a node whose primary ENI holds free addresses from
// before custom networking was turned on; the reconciler marks it not ready.
func customNetworking(t *testing.T, c Config) *sim {
	c.CustomNetworking = true
	s := newSim(t, t3small, c)
	p := &s.in.Snapshot.ENIs[0]
	p.Ready = false
	p.Blocks = []Block{s.block(false), s.block(false)}
	return s
}

func TestCustomNetworkingNeverGrowsThePrimaryENI(t *testing.T) {
	s := customNetworking(t, Config{WarmENITarget: 1, Cooldown: DefaultCooldown, ReleaseDelay: DefaultReleaseDelay})
	p := s.plan()
	if !sameActions(p.Actions, []Action{{Kind: CreateENI, DeviceIndex: 1, Count: 3}}) {
		t.Fatalf("actions %+v; want one new ENI with 3 addresses, nothing on the primary", p.Actions)
	}
	if p.Figures.Free != 0 || p.Figures.MaxPods != 2*3+2 {
		t.Errorf("figures %+v: the primary's addresses counted free, or max pods not (3-1)*(4-1)+2 = 8", p.Figures)
	}
	s.apply(p)
	if p := s.plan(); len(p.Actions) != 0 || p.Figures.Excess != 2 {
		t.Fatalf("grown: %+v, excess %d; want nothing yet, the primary's 2 addresses excess", p.Actions, p.Figures.Excess)
	}
}

// Addresses the primary ENI held before custom networking was turned on are
// nobody's now: once free for the release delay they go back to EC2 in one
// Unassign, whatever the targets; one a pod still holds stays until freed.
func TestCustomNetworkingReleasesThePrimaryENIsFreeAddresses(t *testing.T) {
	for _, c := range []Config{
		{WarmENITarget: 1, Cooldown: DefaultCooldown, ReleaseDelay: DefaultReleaseDelay},
		{WarmIPTarget: 2, Cooldown: DefaultCooldown, ReleaseDelay: DefaultReleaseDelay},
	} {
		s := customNetworking(t, c)
		primary := &s.in.Snapshot.ENIs[0]
		primary.Blocks = append(primary.Blocks, s.block(false))
		primary.Blocks[2].Addrs[0].State, primary.Blocks[2].Addrs[0].Owner = Assigned, "old/eth0"
		s.steady() // grows the secondary ENI; the excess starts waiting
		s.advance(DefaultReleaseDelay)
		p := s.plan()
		want := []Action{{Kind: Unassign, ENIID: primary.ID, Count: 2, Release: []netip.Prefix{primary.Blocks[0].CIDR, primary.Blocks[1].CIDR}}}
		if !sameActions(p.Actions, want) {
			t.Fatalf("%+v: actions %+v; want the primary's two free blocks unassigned, the pod's kept", c, p.Actions)
		}
		s.apply(p)
		s.settle()
		s.advance(DefaultReleaseDelay)
		if p := s.plan(); !p.Empty() {
			t.Fatalf("%+v: after the release: %+v; want nothing", c, p.Actions)
		}
	}
}

func TestCustomNetworkingIPTargetsUseSecondaryENIsOnly(t *testing.T) {
	s := customNetworking(t, Config{WarmIPTarget: 5, Cooldown: DefaultCooldown, ReleaseDelay: DefaultReleaseDelay})
	p := s.plan()
	want := []Action{{Kind: CreateENI, DeviceIndex: 1, Count: 3}, {Kind: CreateENI, DeviceIndex: 2, Count: 2}}
	if !sameActions(p.Actions, want) {
		t.Fatalf("actions %+v; want %+v", p.Actions, want)
	}
}

func TestMaxPodsFormulaWithCustomNetworking(t *testing.T) {
	c := Config{CustomNetworking: true}
	if got := MaxPods(p3dn24xl, c); got != 14*49+2 {
		t.Errorf("p3dn.24xlarge custom networking: %d, want (15-1)*(50-1)+2 = %d", got, 14*49+2)
	}
	c.MaxPods = 50
	if got := MaxPods(p3dn24xl, c); got != 50 {
		t.Errorf("MAX_PODS=50 is kept: %d", got)
	}
}

// An ENI whose subnet is out of addresses is not grown: the shortfall goes
// to a new ENI (placed in another subnet by the reconciler).
func TestFullSubnetENIIsNotGrown(t *testing.T) {
	s := newSim(t, t3small, Config{WarmENITarget: 1, Cooldown: DefaultCooldown, ReleaseDelay: DefaultReleaseDelay})
	s.in.Snapshot.ENIs[0].SubnetID = "subnet-full"
	s.in.Snapshot.FullSubnets = map[string]time.Time{"subnet-full": s.in.Now.Add(time.Minute)}
	p := s.plan()
	if !sameActions(p.Actions, []Action{{Kind: CreateENI, DeviceIndex: 1, Count: 3}}) {
		t.Fatalf("actions %+v; want a new ENI, nothing on the full subnet's ENI", p.Actions)
	}
	s.advance(2 * time.Minute) // the mark expired: the primary is grown again
	if p := s.plan(); !sameActions(p.Actions, []Action{{Kind: Assign, ENIID: "eni-0001", Count: 3}}) {
		t.Fatalf("after the mark: %+v; want the primary grown", p.Actions)
	}
}
