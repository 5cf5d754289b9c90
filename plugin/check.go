package plugin

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"

	"vpc-cni/store"
)

// check verifies the reservation and, as the interface plugin, every
// piece of the wiring; the error names what is missing.
func (v verbs) check(args *skel.CmdArgs) error {
	pod, err := v.admit(args)
	if err != nil {
		return err
	}
	c, err := v.begin(args, pod, "CHECK", func(t Timeouts) Duration { return t.Check })
	if err != nil {
		return err
	}
	defer c.end()
	a, found, err := c.assignment()
	if err != nil {
		return err
	}
	if !found {
		return types.NewError(types.ErrUnknownContainer, fmt.Sprintf("no address is reserved for %s", c.key()), "")
	}
	if err := c.checkPrevResult(a); err != nil {
		return err
	}
	if c.cfg.Delegate { // the interface plugin checks its wiring; the rules are ours
		for _, ip := range podIPs(a) {
			if err := c.host.CheckPodRules(ip, c.podWiring(a).TableFor(ip)); err != nil {
				return types.NewError(types.ErrInternal, "policy rules: "+err.Error(), "")
			}
		}
		return nil
	}
	if err := c.host.CheckPod(c.podWiring(a)); err != nil {
		return types.NewError(types.ErrInternal, "pod wiring: "+err.Error(), "")
	}
	return nil
}

// checkPrevResult compares the addresses the runtime cached with the
// reservation, family by family; a prevResult without a family's address
// says nothing about it.
func (c *call) checkPrevResult(a store.Assignment) error {
	v4, v6 := prevIPs(c.cfg.PrevResult)
	for _, f := range []struct{ prev, held netip.Addr }{{v4, a.IP}, {v6, a.IPv6}} {
		if f.prev.IsValid() && f.prev != f.held {
			held := "no address of that family"
			if f.held.IsValid() {
				held = f.held.String()
			}
			return types.NewError(types.ErrInternal, fmt.Sprintf("prevResult has %s but %s holds %s", f.prev, c.key(), held), "")
		}
	}
	return nil
}

func isUninitialized(err error) bool { return errors.Is(err, store.ErrNotInitialized) }
