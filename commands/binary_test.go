package commands

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksOnlyTheEC2OperationsItCalls guards cloud/handle.go: should
// *ec2.Client become reachable by reflection again, the linker keeps all of
// its ~700 operations (2,439 methods; 43 MB instead of 14 MB), which every
// plugin run pays at start-up.
func TestBinaryLinksOnlyTheEC2OperationsItCalls(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = "/usr/local/go/bin/go"
	}
	out, err := exec.Command(goBin, "tool", "nm", vpcctl).Output()
	if err != nil {
		t.Fatalf("go tool nm: %v", err)
	}
	methods := 0
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, " T github.com/aws/aws-sdk-go-v2/service/ec2.(*Client).") {
			methods++
		}
	}
	if methods > 60 {
		t.Fatalf("the binary links %d *ec2.Client methods; it calls about 13 operations", methods)
	}
}
