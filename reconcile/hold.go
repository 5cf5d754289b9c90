package reconcile

import (
	"fmt"
	"time"

	"vpc-cni/netns"
	"vpc-cni/store"
)

// HoldInUse records that in.IP, which the store gave key, is routed to the
// running pod behind in.Veth: key gives it back and it is kept as that
// pod's (HoldRouted). The plugin's ADD calls it when its wiring finds the
// address taken.
func HoldInUse(tx *store.Tx, key string, in *netns.InUseError, now time.Time) error {
	if _, _, err := tx.Give(key, now); err != nil {
		return err
	}
	return HoldRouted(tx, in, now)
}

// HoldRouted keeps in.IP, which the kernel routes to the running pod
// behind in.Veth, as that pod's: under the sandbox the veth names (its DEL
// and the runtime's GC find it) or else the name a rebuild gives a pod it
// cannot name, so nothing hands it out or releases it while the pod runs
// (gc releases it when its namespace goes). An event says so. The one home
// of the rule for the ADD's wiring and a pass's releases.
func HoldRouted(tx *store.Tx, in *netns.InUseError, now time.Time) error {
	a := store.Assignment{HostVeth: in.Veth, Netns: in.Netns}
	if in.IP.Is4() {
		a.IP = in.IP
	} else {
		a.IPv6 = in.IP
	}
	a.ContainerID, a.IfName, a.Network = in.Sandbox.ContainerID, in.Sandbox.IfName, in.Sandbox.Network
	if a.ContainerID == "" || !NameFree(tx, &a) {
		NameUnknown(&a, in.Veth)
	}
	if _, err := tx.Restore(a, now); err != nil {
		return err
	}
	return tx.AddEvent(store.Event{Time: now, Kind: EventAddressInUse, Message: fmt.Sprintf(
		"%s was free in the state but routed to %s, a running pod's veth: kept as that pod's (%s)", in.IP, in.Veth, a.Key)})
}

// EventAddressInUse is the kind of HoldRouted's event. **contract** (vpcctl events)
const EventAddressInUse = "address-in-use"

// NameUnknown names a pod nothing names: no container ID, so the runtime's
// DEL cannot find it (the plugin's DEL matches it by host veth and
// namespace) and the runtime's GC must not release it; gc does when its
// namespace goes.
func NameUnknown(a *store.Assignment, veth string) {
	a.ContainerID, a.Network = "unknown-"+veth, rebuiltNetwork
	if a.IfName == "" {
		a.IfName = "eth0"
	}
	a.Key = store.AssignmentKey(a.ContainerID, a.IfName)
}

// NameFree sets a's key and reports whether the store holds no other
// assignment under it (one holding the same addresses is a's own).
func NameFree(tx *store.Tx, a *store.Assignment) bool {
	a.Key = store.AssignmentKey(a.ContainerID, a.IfName)
	cur, ok, err := tx.Assignment(a.Key)
	return err == nil && (!ok || (cur.IP == a.IP && cur.IPv6 == a.IPv6))
}

// rebuiltNetwork marks assignments whose network could not be learnt, so
// the plugin's GC (which releases its own network's assignments the
// runtime does not list) leaves them alone.
const rebuiltNetwork = "vpc-cni-rebuild-unknown"
