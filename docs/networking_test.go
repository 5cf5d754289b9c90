package docs

import (
	"os"
	"regexp"
	"testing"

	"vpc-cni/netns"
)

// The egress veth's name rule in networking.md is the code's: its worked
// example is what netns.EgressVethName gives.
func TestNetworkingPageStatesTheEgressVethName(t *testing.T) {
	data, err := os.ReadFile("networking.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("sha1\\(\"<the pod's host veth name>/egress\"\\) \\(host veth `([a-z0-9]+)`: `([a-z0-9]+)`\\)").FindSubmatch(data)
	if m == nil {
		t.Fatal("networking.md no longer states the egress veth's name rule with its example")
	}
	if got := netns.EgressVethName(string(m[1])); got != string(m[2]) {
		t.Errorf("networking.md says host veth %s gets egress veth %s; the code names it %s", m[1], m[2], got)
	}
}
