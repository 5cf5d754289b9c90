package cloud

import (
	"context"
	"testing"

	"vpc-cni/sim/ec2sim"
)

// IMDS-only mode learns a node's limits from the built-in table; they must
// be what DescribeInstanceTypes says, for one-card, multi-card, Xen and bare
// metal types alike.
func TestBuiltinLimitsAreWhatDescribeInstanceTypesSays(t *testing.T) {
	for _, typ := range []string{"m5.large", "t3.small", "c6in.32xlarge", "c1.medium", "a1.metal"} {
		sim := startSim(t, ec2sim.Config{InstanceType: typ})
		c := newClient(t, Options{})
		wantLim, wantInfo, err := c.InstanceLimits(context.Background(), typ)
		if err != nil {
			t.Fatal(err)
		}
		lim, info, err := BuiltinLimits(typ)
		if err != nil || lim != wantLim || info != wantInfo {
			t.Errorf("%s: built-in %+v %+v (%v); EC2 says %+v %+v", typ, lim, info, err, wantLim, wantInfo)
		}
		if n := sim.Counters()["DescribeInstanceTypes"]; n != 1 {
			t.Errorf("%s: %d DescribeInstanceTypes calls, want the test's own 1", typ, n)
		}
	}
}

func TestBuiltinLimitsNameAnUnknownType(t *testing.T) {
	_, _, err := BuiltinLimits("z9.huge")
	if !IsKind(err, KindNotFound) || err == nil {
		t.Fatalf("unknown type: %v, want KindNotFound", err)
	}
}
