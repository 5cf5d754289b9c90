package reconcile

import (
	"os"
	"syscall"
)

// crashAt is a test seam: the crash tests set VPC_CNI_TEST_CRASH_AT to a
// checkpoint name in a child process, which then SIGKILLs itself there, so
// the next pass must repair what the killed one left. Unset (always, outside
// those tests) a checkpoint is one string comparison.
var crashAt = os.Getenv("VPC_CNI_TEST_CRASH_AT")

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

// checkpoint kills the process when name is the test's crash point.
func checkpoint(name string) {
	if crashAt != "" && crashAt == name {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}
