package reconcile

// checkpointHook, when set, runs at each checkpoint of a pass. Only the crash
// tests set it (from _test.go, in the test binary they re-exec as a helper
// process), to SIGKILL the pass there so the next one must repair what it
// left. The shipped binary has no way to set it: a checkpoint is a nil check.
var checkpointHook func(name string)

// Checkpoint names, in the order a pass reaches them.
const (
	cpPlanned    = "planned"    // intents recorded and blocks marked releasing; no EC2 call yet
	cpCreated    = "created"    // CreateNetworkInterface done, AttachNetworkInterface not yet
	cpAttached   = "attached"   // AttachNetworkInterface done, nothing committed
	cpAssigned   = "assigned"   // AssignPrivateIpAddresses done, nothing committed
	cpUnassigned = "unassigned" // UnassignPrivateIpAddresses done, nothing committed
	cpDetached   = "detached"   // DetachNetworkInterface done, DeleteNetworkInterface not yet
	cpExecuted   = "executed"   // every EC2 call of the pass made, nothing committed
)

// checkpoint marks a point of a pass where a crash leaves EC2 and the store
// apart; the crash tests kill the pass at each.
func checkpoint(name string) {
	if checkpointHook != nil {
		checkpointHook(name)
	}
}
