package pool

import (
	"reflect"
	"strings"
	"testing"
)

func TestComputeIsDeterministic(t *testing.T) {
	for _, pd := range []bool{false, true} {
		c := Defaults()
		c.PrefixDelegation, c.MaxPods = pd, 500
		c.WarmIPTarget, c.MinIPTarget = 3, 20
		s := newSim(t, p3dn24xl, c)
		s.steady()
		s.addPods(60)
		for range 32 { // two whole prefixes' worth
			s.delPod(16)
		}
		for k := 0; k < 15; k += 3 {
			s.delPod(k)
		}
		s.advance(c.Cooldown)
		s.plan()
		s.advance(c.ReleaseDelay)
		first := Compute(s.in)
		if first.Empty() {
			t.Fatalf("prefixes=%v: expected a release to compare", pd)
		}
		for range 50 {
			if again := Compute(s.in); !reflect.DeepEqual(first, again) {
				t.Fatalf("prefixes=%v: plans differ:\n%+v\n%+v", pd, first, again)
			}
		}
		for _, a := range first.Actions {
			if !strings.Contains(a.Reason, first.Figures.Policy) {
				t.Errorf("reason %q does not name the policy %q", a.Reason, first.Figures.Policy)
			}
		}
	}
}
