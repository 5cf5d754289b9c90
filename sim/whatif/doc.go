// Package whatif replays pod arrivals and departures on a virtual clock to
// show what a setting of the pool targets costs: EC2 calls against idle
// addresses, pods that found the pool empty, throttled calls.
//
// One node (Run) goes through the real thing: the reconcile.Runner with its
// Now on the virtual clock, the real store in a temporary directory, and the
// real SDK against the emulator (sim/ec2sim) over loopback, whose clock
// is the same virtual clock. Nothing sleeps. What is modelled: the plugin's
// ADD (take; if empty, register as waiting and run a grow-only pass; after an
// ADD that leaves the pool under its target, a pass RefillDelay later), the
// timer's pass every Interval, and EC2's latency: a new ENI's addresses are
// usable ENILatency after the pass that created it (the Host refuses to set it
// up before, and a pass runs when it is due). Assign and Unassign take effect
// at once. Throttling is counted by replaying every call through the
// account's token buckets (Account); one node never empties them.
//
// Many nodes (Cluster) cannot each run bbolt and HTTP in seconds, so the
// cluster model drives the pure policy (pool.ComputePools, pool.PickPodAddress)
// on in-memory snapshots, applies plans the way a pass does, and makes every
// EC2 call take a token from the shared account buckets; a throttled call is
// retried at the node's next pass. See cluster.go.
//
// Nothing here runs at package initialisation: the plugin's binary links
// commands/, and with it this package, so it must cost nothing at start-up.
package whatif
