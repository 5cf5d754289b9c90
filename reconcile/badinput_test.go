package reconcile

import (
	"crypto/sha256"
	"os"
	"strings"
	"testing"
	"vpc-cni/internal/simtest"

	"vpc-cni/cloud"
	"vpc-cni/internal/ec2sim"
	"vpc-cni/settings"
)

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// A pass that cannot reach or may not use EC2 or IMDS fails with a message
// that says which and what to do, and leaves the state file as it was.
func TestBadInputLeavesStoreUnchanged(t *testing.T) {
	cases := []struct {
		name        string
		initialized bool // the node was learnt before the failure
		breakIt     func(t *testing.T, sim *ec2sim.Sim)
		kind        cloud.Kind
		says        []string
	}{
		{"IMDS unreachable on a fresh node", false, func(t *testing.T, sim *ec2sim.Sim) {
			t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", simtest.ClosedURL(t))
		}, cloud.KindUnreachable, []string{"instance metadata", "not reachable", "AWS_EC2_METADATA_SERVICE_ENDPOINT"}},
		{"EC2 unreachable", true, func(t *testing.T, sim *ec2sim.Sim) {
			t.Setenv("AWS_ENDPOINT_URL_EC2", simtest.ClosedURL(t))
		}, cloud.KindUnreachable, []string{"EC2 endpoint", "not reachable", "AWS_ENDPOINT_URL_EC2"}},
		{"EC2 unreachable on a fresh node", false, func(t *testing.T, sim *ec2sim.Sim) {
			t.Setenv("AWS_ENDPOINT_URL_EC2", simtest.ClosedURL(t))
		}, cloud.KindUnreachable, []string{"DescribeInstances", "not reachable"}},
		{"no credentials", true, func(t *testing.T, sim *ec2sim.Sim) {
			t.Setenv("AWS_ACCESS_KEY_ID", "")
			t.Setenv("AWS_SECRET_ACCESS_KEY", "")
			t.Setenv("AWS_EC2_METADATA_DISABLED", "true") // no instance role either
		}, cloud.KindNoCredentials, []string{"credentials", "AWS_ACCESS_KEY_ID"}},
		{"DescribeNetworkInterfaces denied", true, func(t *testing.T, sim *ec2sim.Sim) {
			sim.DenyAction("DescribeNetworkInterfaces")
		}, cloud.KindUnauthorized, []string{"not authorized", "ec2:DescribeNetworkInterfaces", "IAM"}},
		{"DescribeInstanceTypes denied", false, func(t *testing.T, sim *ec2sim.Sim) {
			sim.DenyAction("DescribeInstanceTypes")
		}, cloud.KindUnauthorized, []string{"ec2:DescribeInstanceTypes", "IAM"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sim := startSim(t, "t3.small")
			dir := t.TempDir()
			if c.initialized {
				attachNode(t, sim, dir, env{}).converge(5)
			}
			c.breakIt(t, sim)
			// A fresh process (a new SDK configuration) that must read EC2:
			// at rest a pass reads IMDS alone and would not see EC2 broken.
			n := attachNode(t, sim, dir, env{settings.EC2ResyncInterval: "0"})
			before := fileSum(t, n.st.Path())
			_, err := n.r.Run(ctxFor(t), Options{})
			if err == nil {
				t.Fatal("the pass succeeded")
			}
			if got := cloud.Classify(err); got != c.kind {
				t.Errorf("kind %v, want %v: %v", got, c.kind, err)
			}
			for _, s := range c.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if fileSum(t, n.st.Path()) != before {
				t.Errorf("the failed pass changed %s", n.st.Path())
			}
		})
	}
}
