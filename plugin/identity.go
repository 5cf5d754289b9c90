package plugin

import (
	"errors"

	"github.com/containernetworking/cni/pkg/types"

	"vpc-cni/reconcile"
	"vpc-cni/store"
)

// The state file is trusted within the kernel boot under which IMDS last
// confirmed its node (store.Node.VouchedFor: a file read). After a boot the
// first process asks IMDS itself, within its deadline: a new instance made
// from an image, or a state dir copied from another node, names another
// instance, whose addresses are not this one's to hand out.

// bootID is the kernel's boot ID, read once a call.
func (c *call) bootID() string {
	if c.boot == nil {
		b := reconcile.BootID()
		c.boot = &b
	}
	return *c.boot
}

// confirmNode asks IMDS whether node is this instance and records the boot when
// it is. A Foreign answer is remembered for the rest of the call.
func (c *call) confirmNode(node store.Node) error {
	if c.foreign != nil && c.foreign.StoredID == node.InstanceID {
		return *c.foreign
	}
	if node.VouchedFor(c.bootID(), c.confirmedID) {
		return nil
	}
	err := reconcile.Confirm(c.ctx, c.store, node, c.bootID())
	var f reconcile.Foreign
	switch {
	case errors.As(err, &f):
		c.foreign = &f
	case err == nil:
		c.confirmedID = node.InstanceID
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrReplaced), errors.Is(err, store.ErrNotInitialized):
		c.confirmedID = node.InstanceID // IMDS confirmed it; the file changed since, and its next reader checks again
		c.log.Info("node confirmed, but not recorded: the state file changed", "err", err)
		return nil
	}
	return err
}

// statusIdentity fails STATUS only when IMDS says the state file is another
// instance's: a reboot of the same instance stays ready (containerd turns a
// STATUS error into a NotReady node, and Kubernetes evicts), and so does a
// node whose IMDS cannot answer now (logged; ADD does not hand out
// addresses until it can).
func (c *call) statusIdentity(node store.Node) error {
	err := c.confirmNode(node)
	if reconcile.IsForeign(err) {
		return unavailable(err.Error())
	}
	if err != nil {
		c.log.Warn("could not confirm the node's identity with IMDS; ready as the state file says", "err", err)
	}
	return nil
}

// takeUnconfirmed is the ADD's take after the store refused an unconfirmed
// node: confirmed, it takes again; another instance's file gives nothing
// (ErrNoFreeAddress: under the reconcile lock the grow pass sets it aside
// and learns this node); IMDS failing fails the ADD (try again later).
func (c *call) takeUnconfirmed(want store.Assignment, node store.Node) (store.Assignment, error) {
	err := c.confirmNode(node)
	switch {
	case err == nil:
		return c.takeOnce(want)
	case reconcile.IsForeign(err):
		return store.Assignment{}, store.ErrNoFreeAddress
	}
	return store.Assignment{}, types.NewError(types.ErrTryAgainLater,
		"the state file was not confirmed for this instance in this boot, and IMDS did not answer: "+err.Error(), "")
}
