package cloud

import (
	"encoding/json"
	"os"
	"testing"
)

// Every action of the shipped policy (which a deploy test holds to the
// code's calls) has an authorization check, so doctor --iam covers all.
func TestEveryPolicyActionHasACheck(t *testing.T) {
	data, err := os.ReadFile("../deploy/iam-policy.json")
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ Statement []struct{ Action []string } }
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range p.Statement {
		for _, a := range s.Action {
			n++
			if dryRunOf(a[len("ec2:"):]) == nil {
				t.Errorf("%s: no authorization check", a)
			}
		}
	}
	if n < 10 {
		t.Fatalf("read only %d actions", n)
	}
}
