package commands

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// iamOutput is `doctor --iam -o json`, its stable field names.
type iamOutput struct {
	Checks []struct {
		Action, Result, Method, Statement, Detail string
	} `json:"checks"`
	Calls int `json:"ec2Calls"`
	Add   *struct {
		Statement []struct {
			Sid    string
			Action []string
		}
	} `json:"add"`
}

// doctor --iam with nothing denied: exit 0, every needed action listed as
// allowed; with one denied: it is named with its statement, exit 1. Only
// dry runs (and probes EC2 refuses) reach EC2: the node is unchanged.
func TestDoctorIAM(t *testing.T) {
	sim, env := newSim(t, "t3.small")
	before := sim.State()
	r := vpc(t, env, "--state-dir", t.TempDir(), "doctor", "--iam")
	r.want(t, 0, "ec2:CreateNetworkInterface", "allowed", "VpcCniManageENIs", "no change made")
	if strings.Contains(r.stdout, "denied") || strings.Contains(r.stdout, "ec2:DescribeSecurityGroups") {
		t.Fatalf("allowed run:\n%s", r.stdout)
	}
	out := iamJSON(t, vpc(t, env, "--state-dir", t.TempDir(), "doctor", "--iam", "-o", "json"), 0)
	if len(out.Checks) != 12 || out.Add != nil {
		t.Fatalf("want the 12 actions of an IPv4 node, all allowed: %+v", out)
	}
	if calls := sum(sim.Counters(), "Describe"); calls > 2*out.Calls {
		t.Fatalf("%d EC2 calls for two runs reporting %d each", calls, out.Calls)
	}

	sim.DenyAction("AttachNetworkInterface")
	r = vpc(t, env, "--state-dir", t.TempDir(), "doctor", "--iam")
	r.want(t, 1, "ec2:AttachNetworkInterface", "denied", `"Sid": "VpcCniManageENIs"`, "1 of 12 EC2 actions not allowed")
	out = iamJSON(t, vpc(t, env, "--state-dir", t.TempDir(), "doctor", "--iam", "-o", "json"), 1)
	if out.Add == nil || len(out.Add.Statement) != 1 || !slices.Equal(out.Add.Statement[0].Action, []string{"ec2:AttachNetworkInterface"}) {
		t.Fatalf("statement to add: %+v", out.Add)
	}
	assertOnlyDryRuns(t, sim.Counters(), sim.DryRuns())
	if after := sim.State(); len(after.ENIs) != len(before.ENIs) || after.SubnetFree != before.SubnetFree {
		t.Fatalf("the node changed: %+v -> %+v", before, after)
	}
}

// Configuration decides the list: IPv6 pods add the IPv6 actions, a
// profile with groups by tag DescribeSecurityGroups; IMDS-only needs none.
func TestDoctorIAMFollowsTheConfiguration(t *testing.T) {
	_, env := newSim(t, "m5.large")
	out := iamJSON(t, vpc(t, with(env, "PROFILE_DB_SECURITY_GROUPS=tag:team=db"), "--state-dir", t.TempDir(),
		"doctor", "--iam", "-o", "json"), 0)
	if !slices.ContainsFunc(out.Checks, func(c struct{ Action, Result, Method, Statement, Detail string }) bool {
		return c.Action == "ec2:DescribeSecurityGroups"
	}) {
		t.Fatalf("profile with groups by tag, no DescribeSecurityGroups: %+v", out.Checks)
	}
	out = iamJSON(t, vpc(t, with(env, "ENABLE_IPv6=true", "ENABLE_IPv4=false", "ENABLE_PREFIX_DELEGATION=true"), "--state-dir", t.TempDir(),
		"doctor", "--iam", "-o", "json"), 0)
	if !slices.ContainsFunc(out.Checks, func(c struct{ Action, Result, Method, Statement, Detail string }) bool {
		return c.Action == "ec2:AssignIpv6Addresses" && c.Method == "probe" && c.Result == "allowed"
	}) {
		t.Fatalf("IPv6 pods, no AssignIpv6Addresses: %+v", out.Checks)
	}
	out = iamJSON(t, vpc(t, with(env, "ENABLE_IMDS_ONLY_MODE=true"), "--state-dir", t.TempDir(), "doctor", "--iam", "-o", "json"), 0)
	if len(out.Checks) != 0 || out.Calls != 0 {
		t.Fatalf("IMDS-only mode checked %+v", out)
	}
}

func iamJSON(t *testing.T, r run, code int) iamOutput {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
	var out iamOutput
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	return out
}

func sum(counters map[string]int, prefix string) int {
	n := 0
	for k, v := range counters {
		if strings.HasPrefix(k, prefix) {
			n += v
		}
	}
	return n
}

// assertOnlyDryRuns: every call of a mutating action was a dry run, one of
// the four probes (which EC2 refuses), or refused as denied (the two runs
// with AttachNetworkInterface denied).
func assertOnlyDryRuns(t *testing.T, counters, dry map[string]int) {
	t.Helper()
	probes := []string{"AssignPrivateIpAddresses", "UnassignPrivateIpAddresses", "AssignIpv6Addresses", "UnassignIpv6Addresses"}
	for _, a := range slices.Sorted(maps.Keys(counters)) {
		if strings.HasPrefix(a, "Describe") || strings.HasPrefix(a, "IMDS") || slices.Contains(probes, a) {
			continue
		}
		if counters[a] != dry[a] && !(a == "AttachNetworkInterface" && dry[a] == counters[a]-2) {
			t.Errorf("%s: %d calls, %d of them dry runs", a, counters[a], dry[a])
		}
	}
}

// install checks the role before the timer and the first pass: one action
// denied stops it with the action and the statement, nothing scheduled and
// no conflist; --skip-iam-check installs without the check.
func TestInstallStopsOnAMissingAction(t *testing.T) {
	sim, env := newSim(t, "m5.large")
	sim.DenyAction("CreateNetworkInterface")
	root := t.TempDir()
	vpc(t, env, "install", "--root", root, "--timer", "none").want(t, 1,
		"ec2:CreateNetworkInterface", "denied", `"Sid": "VpcCniManageENIs"`, "the conflist is not written", "--skip-iam-check")
	if _, err := os.Stat(filepath.Join(root, "etc/cni/net.d/10-vpc-cni.conflist")); err == nil {
		t.Fatal("conflist written with an action denied")
	}
	if sim.DryRuns()["CreateNetworkInterface"] != 0 || len(sim.State().ENIs) != 1 {
		t.Fatalf("the install went on to EC2: %v", sim.Counters())
	}
	sim.AllowAction("CreateNetworkInterface")
	sim.DenyAction("DeleteNetworkInterface") // a pass of a new node does not delete
	vpc(t, env, "install", "--root", root, "--timer", "none", "--skip-iam-check").want(t, 0, "skipped    IAM check")
}
