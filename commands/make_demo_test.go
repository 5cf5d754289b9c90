package commands

import (
	"os/exec"
	"strings"
	"testing"
)

// make demo says it is building before the build, which takes minutes on a
// cold cache and prints nothing.
func TestMakeDemoSaysItIsBuildingFirst(t *testing.T) {
	out, err := exec.Command("make", "-s", "-n", "-C", "..", "demo").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n demo: %v\n%s", err, out)
	}
	s := string(out)
	say, build := strings.Index(s, "building bin/vpcctl (first time: a few minutes)..."), strings.Index(s, " build ")
	if say < 0 || build < 0 || say > build {
		t.Errorf("make demo does not say it is building before it builds:\n%s", s)
	}
}
