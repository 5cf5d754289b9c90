package npa

import (
	"os/exec"
	"strings"
	"testing"

	"vpc-cni/internal/testsupport/gotool"
)

// The shipped binary speaks the agent's protocol without the protobuf or
// gRPC modules: their initialisers would run at every plugin start, ADDs
// and DELs of nodes without network policy included.
func TestTheBinaryLinksNoProtobufOrGRPC(t *testing.T) {
	cmd := exec.Command(gotool.Go(), "list", "-deps", "vpc-cni")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "google.golang.org/protobuf") || strings.HasPrefix(p, "google.golang.org/grpc") {
			t.Errorf("the binary links %s", p)
		}
	}
}
