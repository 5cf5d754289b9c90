//go:build cluster

package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// profilePod is a pod of namespace ns that picks a network profile.
func profilePod(ns, profile string) string {
	return `apiVersion: v1
kind: Pod
metadata: {name: picks, namespace: ` + ns + `, annotations: {vpc-cni.io/profile: ` + profile + `}}
spec:
  containers: [{name: probe, image: ` + probeRef + `, imagePullPolicy: Never}]
`
}

// The chart's ValidatingAdmissionPolicy, rendered as a user would with
// namespace team-a allowed profile gold, in the cluster's API server:
// team-a may pick gold and not blue, team-b may pick none.
func TestProfileAdmissionPolicy(t *testing.T) {
	manifest, err := exec.Command(tc.tools.helm, "template", "vpc-cni", filepath.Join(tc.repo, "deploy/helm/vpc-cni"),
		"--namespace", "kube-system", "--set", "profileAdmission.create=true",
		"--set-json", `profileAdmission.allowed={"team-a":["gold"]}`,
		"--show-only", "templates/profile-admission-policy.yaml",
		"--show-only", "templates/profile-admission-binding.yaml").Output()
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	apply(t, string(manifest))
	apply(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: team-b}\n")
	t.Cleanup(func() {
		_, _ = tc.kubectlOut(manifest, "delete", "-f", "-")
		_, _ = tc.kubectlOut(nil, "delete", "namespace", "team-a", "team-b", "--wait=false")
	})
	defaultServiceAccounts(t, "team-a", "team-b")
	create := func(ns, profile string) (string, error) {
		out, err := tc.kubectlOut([]byte(profilePod(ns, profile)), "create", "--dry-run=server", "-f", "-")
		return string(out), err
	}
	// The API server picks up a new policy within seconds.
	eventually(t, "the policy refusing team-b's pod", time.Minute, func() (bool, string) {
		_, err := create("team-b", "gold")
		return err != nil && strings.Contains(err.Error(), "may not use the network profile gold"), fmt.Sprint(err)
	})
	if out, err := create("team-a", "gold"); err != nil {
		t.Errorf("team-a picking gold: %v %s; want it admitted", err, out)
	}
	if _, err := create("team-a", "blue"); err == nil || !strings.Contains(err.Error(), "may not use the network profile blue") {
		t.Errorf("team-a picking blue: %v; want it refused, naming blue", err)
	}
}
