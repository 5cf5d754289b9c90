package plugin

import (
	"errors"
	"fmt"

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
	if ip, ok := prevIP(c.cfg.PrevResult); ok && ip != a.IP {
		return types.NewError(types.ErrInternal, fmt.Sprintf("prevResult has %s but %s holds %s", ip, c.key(), a.IP), "")
	}
	if c.cfg.Delegate { // the interface plugin checks its wiring; the rules are ours
		if err := c.host.CheckPodRules(a.IP, c.podWiring(a).Table); err != nil {
			return types.NewError(types.ErrInternal, "policy rules: "+err.Error(), "")
		}
		return nil
	}
	if err := c.host.CheckPod(c.podWiring(a)); err != nil {
		return types.NewError(types.ErrInternal, "pod wiring: "+err.Error(), "")
	}
	return nil
}

func isUninitialized(err error) bool { return errors.Is(err, store.ErrNotInitialized) }
