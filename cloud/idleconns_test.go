package cloud

import (
	"os"
	"strings"
	"testing"
	"time"

	"vpc-cni/sim/ec2sim"
)

// A loop makes a new client every pass: the connections of the earlier
// ones close soon after they fall idle instead of after the SDK's 90 s (a
// loop passing every 200 ms held 150 sockets after 30 s).
func TestEarlierClientsConnectionsClose(t *testing.T) {
	startSim(t, ec2sim.Config{})
	before := openSockets(t)
	for range 10 {
		c := newClient(t, Options{})
		id, err := c.Identity(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.InstanceENIs(testCtx(t), id.InstanceID); err != nil {
			t.Fatal(err)
		}
	}
	if n := openSockets(t); n < before+10 {
		t.Fatalf("%d sockets after 10 clients, %d before: the check cannot see kept-alive connections", n, before)
	}
	deadline := time.Now().Add(30 * time.Second) // well under the SDK's 90 s
	for openSockets(t) > before+2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d sockets 30 s after the clients fell idle, %d before", openSockets(t), before)
		}
		time.Sleep(100 * time.Millisecond) // polling a condition: no event says a connection closed
	}
}

// openSockets counts this process's socket fds (both ends: the emulator
// runs in this process).
func openSockets(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	n := 0
	for _, e := range entries {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(target, "socket:") {
			n++
		}
	}
	return n
}
