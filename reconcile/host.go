package reconcile

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"vpc-cni/netns"
	"vpc-cni/pool"
	"vpc-cni/store"
)

// setupHosts sets up the node side of every secondary ENI that is not ready
// and marks it ready, so its addresses may be handed out. An ENI whose link
// has not appeared yet stays not ready until a later pass.
func (p *pass) setupHosts() {
	// The rare subnet lookup gets its own short deadline; this signature is
	// shared with adopt.go.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if p.Host == nil {
		return
	}
	var ready []pool.ENI
	for _, e := range p.unready {
		if p.deleting[e.ID] {
			continue
		}
		e.SubnetCIDR = p.subnetOf(ctx, e)
		if err := p.setupENI(e); err != nil {
			p.log().Info("ENI not ready yet", "eni", e.ID, "err", err)
			p.rep.Failed = append(p.rep.Failed, "host setup of "+e.ID+": "+err.Error())
			continue
		}
		ready = append(ready, e)
	}
	if len(ready) == 0 {
		return
	}
	err := p.Store.Update(func(tx *store.Tx) error {
		for _, e := range ready {
			if err := tx.SetENISubnetCIDR(e.ID, e.SubnetCIDR); err != nil {
				return err
			}
			if err := tx.SetENIReady(e.ID, true); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		p.rep.Failed = append(p.rep.Failed, "marking ENIs ready: "+err.Error())
	}
}

// linkPoll is how often a pass that waits for a late link looks for it: a
// netlink dump costs little, and the link comes seconds after the attach.
const linkPoll = 100 * time.Millisecond

// setupENI sets up e's host side. With Options.LinkWait (the plugin's inline
// grow, whose ADD needs this ENI's addresses) it waits until then for a link
// that has not appeared yet, looking every linkPoll; otherwise a later pass
// sets it up.
func (p *pass) setupENI(e pool.ENI) error {
	err := p.Host.SetupENI(e, e.SubnetCIDR, p.cfg.MTU)
	if p.opts.LinkWait.IsZero() || !errors.Is(err, netns.ErrLinkNotReady) {
		return err
	}
	start := time.Now() // wall time: the kernel's link does not follow a test's clock
	for errors.Is(err, netns.ErrLinkNotReady) {
		left := time.Until(p.opts.LinkWait)
		if left <= 0 {
			return fmt.Errorf("waited %s for the link of %s (MAC %s) to appear after its attach, until the ADD's deadline: %w",
				time.Since(start).Round(time.Millisecond), e.ID, e.MAC, err)
		}
		time.Sleep(min(left, linkPoll))
		err = p.Host.SetupENI(e, e.SubnetCIDR, p.cfg.MTU)
	}
	if err == nil {
		p.log().Info("late link set up", "eni", e.ID, "mac", e.MAC, "waited", time.Since(start))
	}
	return err
}

// repairHosts sets up again the host side of every secondary ENI that was
// ready: another program may have flushed its route table, removed its
// address or its rule (networkd or DHCP on a hot-plugged ENI, an operator's
// ip route flush). SetupENI is idempotent: on a node in order it reads and
// rewrites the same routes. An ENI whose link is gone is left to the next
// EC2 read; one this pass tore down to detach or delete is left alone.
func (p *pass) repairHosts() {
	if p.Host == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, e := range p.ready {
		if p.deleting[e.ID] {
			continue
		}
		if !e.SubnetCIDR.IsValid() {
			e.SubnetCIDR = p.subnetOf(ctx, e)
		}
		err := p.Host.SetupENI(e, e.SubnetCIDR, p.cfg.MTU)
		switch {
		case errors.Is(err, netns.ErrLinkNotReady):
			p.log().Info("ENI link gone; the next EC2 read settles it", "eni", e.ID, "err", err)
		case err != nil:
			p.rep.Failed = append(p.rep.Failed, "host side of "+e.ID+": "+err.Error())
		}
	}
}

// readyHostSides are the secondary ENIs whose host side is ours and set up.
func readyHostSides(enis []pool.ENI) []pool.ENI {
	var out []pool.ENI
	for _, e := range enis {
		if e.Ready && !e.Primary() && !e.NotOurs() && e.Card == 0 {
			out = append(out, e)
		}
	}
	return out
}

// unready are the secondary ENIs whose host side is not set up. A not-ours
// ENI is never one: its route table, rules and address are not ours to set.
func unready(enis []pool.ENI) []pool.ENI {
	var out []pool.ENI
	for _, e := range enis {
		if !e.Ready && !e.Primary() && !e.NotOurs() && e.Card == 0 {
			out = append(out, e)
		}
	}
	return out
}

// subnetOf is the CIDR of the ENI's own subnet, whose gateway its route
// table uses: known for ENIs this node placed, the node's for ENIs in its
// subnet, else asked of EC2 (an ENI adopted after a crash, in a subnet that
// discovery or custom networking chose), once per pass.
func (p *pass) subnetOf(ctx context.Context, e pool.ENI) netip.Prefix {
	switch {
	case e.SubnetCIDR.IsValid():
		return e.SubnetCIDR
	case e.SubnetID == "" || e.SubnetID == p.node.SubnetID:
		return p.node.SubnetCIDR
	}
	if cidr, ok := p.subnetCIDRs[e.SubnetID]; ok {
		return cidr
	}
	p.rep.Calls = append(p.rep.Calls, "DescribeSubnets")
	sub, err := p.Cloud.Subnet(ctx, e.SubnetID)
	if err != nil {
		p.rep.Failed = append(p.rep.Failed, fmt.Sprintf("the subnet of %s: %v", e.ID, err))
		return netip.Prefix{} // the setup fails and a later pass tries again
	}
	if p.subnetCIDRs == nil {
		p.subnetCIDRs = map[string]netip.Prefix{}
	}
	p.subnetCIDRs[e.SubnetID] = sub.CIDR
	return sub.CIDR
}

// KernelHost sets up ENIs in the network namespace the process runs in.
type KernelHost struct{}

func (KernelHost) SetupENI(e pool.ENI, subnet netip.Prefix, mtu int) error {
	return netns.SetupENI(eniHost(e, subnet, mtu))
}

func (KernelHost) TeardownENI(e pool.ENI, subnet netip.Prefix) error {
	return netns.TeardownENI(eniHost(e, subnet, 0))
}

func eniHost(e pool.ENI, subnet netip.Prefix, mtu int) netns.ENIHost {
	return netns.ENIHost{MAC: e.MAC, MTU: mtu, PrimaryIP: e.PrimaryIP, SubnetCIDR: subnet, Table: netns.RouteTable(e.DeviceIndex)}
}
