package commands

import (
	"bytes"
	"os"
	"testing"
)

// TestBinaryLinksOnlyTheEC2OperationsItCalls guards cloud/handle.go: should
// *ec2.Client become reachable by reflection again, the linker keeps all of
// its ~700 operations (2,439 methods; 43 MB instead of 14 MB), which every
// plugin run pays at start-up. The binary is the one `make build` ships:
// stripped, so the methods are counted by their names in the function name
// table that the Go runtime keeps for stack traces.
func TestBinaryLinksOnlyTheEC2OperationsItCalls(t *testing.T) {
	bin, err := os.ReadFile(vpcctl)
	if err != nil {
		t.Fatal(err)
	}
	methods := bytes.Count(bin, []byte("github.com/aws/aws-sdk-go-v2/service/ec2.(*Client)."))
	if methods == 0 {
		t.Fatal("no *ec2.Client method names in the binary: the count below would prove nothing")
	}
	if methods > 60 {
		t.Fatalf("the binary links %d *ec2.Client methods; it calls about 13 operations", methods)
	}
	t.Logf("%d *ec2.Client methods linked", methods)
}
