package deploy

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// networkPolicy.enabled adds the reference's agent beside the loop, with
// aws-node's privileges, mounts and flags (policy on), shares
// /var/run/aws-node with the loop, sets the mode, and gives the agent alone
// an API token bound to its ClusterRole.
func TestHelmNetworkPolicyAddsTheAgent(t *testing.T) {
	for mode, args := range map[string][]string{
		"standard": {"--set", "networkPolicy.enabled=true"},
		"strict":   {"--set", "networkPolicy.enabled=true", "--set", "networkPolicy.enforcingMode=Strict"},
	} {
		objs := decodeStrictly(t, documents(t, render(t, args...)))
		cm := objs["ConfigMap"].(*corev1.ConfigMap)
		if !strings.Contains(cm.Data["config"], "NETWORK_POLICY_ENFORCING_MODE="+mode+"\n") {
			t.Errorf("%s: the ConfigMap lacks the mode:\n%s", mode, cm.Data["config"])
		}
		ds := objs["DaemonSet"].(*appsv1.DaemonSet)
		spec := ds.Spec.Template.Spec
		if len(spec.Containers) != 2 || spec.Containers[1].Name != "aws-eks-nodeagent" {
			t.Fatalf("%s: containers %d, want the loop and aws-eks-nodeagent", mode, len(spec.Containers))
		}
		if spec.ServiceAccountName != "vpc-cni" || spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
			t.Errorf("account %q automount %v, want vpc-cni with no pod-wide token", spec.ServiceAccountName, spec.AutomountServiceAccountToken)
		}
		checkAgentContainer(t, spec.Containers[1])
		loop := spec.Containers[0]
		if mountOf(loop, "run-dir") != "/var/run/aws-node" || mountOf(loop, "agent-token") != "" {
			t.Errorf("the loop's mounts %+v: want /var/run/aws-node and no token", loop.VolumeMounts)
		}
		role := objs["ClusterRole"].(*rbacv1.ClusterRole)
		if len(role.Rules) == 0 || !slices.Contains(role.Rules[0].Resources, "policyendpoints") || slices.Contains(role.Rules[0].Verbs, "update") {
			t.Errorf("ClusterRole rules %+v: want read access to policyendpoints", role.Rules)
		}
		b := objs["ClusterRoleBinding"].(*rbacv1.ClusterRoleBinding)
		if b.RoleRef.Name != role.Name || len(b.Subjects) != 1 || b.Subjects[0].Name != "vpc-cni" || b.Subjects[0].Namespace != "kube-system" {
			t.Errorf("binding %+v does not bind the role to the account", b)
		}
	}
}

func checkAgentContainer(t *testing.T, c corev1.Container) {
	t.Helper()
	if c.Image != "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon/aws-network-policy-agent:v1.4.2" {
		t.Errorf("agent image %s", c.Image)
	}
	sc := c.SecurityContext
	if sc == nil || sc.Privileged == nil || !*sc.Privileged || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Add, "NET_ADMIN") {
		t.Errorf("agent securityContext %+v, want privileged with NET_ADMIN", sc)
	}
	for _, a := range []string{"--enable-network-policy=true", "--enable-ipv6=false", "--metrics-bind-addr=:8162",
		"--health-probe-bind-addr=:8163", "--conntrack-cache-table-size=524288", "--log-file=/var/log/aws-routed-eni/network-policy-agent.log"} {
		if !slices.Contains(c.Args, a) {
			t.Errorf("agent args %v lack %s", c.Args, a)
		}
	}
	want := map[string]string{"cni-bin": "/host/opt/cni/bin", "bpf-pin-path": "/sys/fs/bpf", "agent-log-dir": "/var/log/aws-routed-eni",
		"run-dir": "/var/run/aws-node", "agent-token": "/var/run/secrets/kubernetes.io/serviceaccount"}
	for name, path := range want {
		if got := mountOf(c, name); got != path {
			t.Errorf("agent mount %s at %q, want %s", name, got, path)
		}
	}
}

func mountOf(c corev1.Container, volume string) string {
	for _, m := range c.VolumeMounts {
		if m.Name == volume {
			return m.MountPath
		}
	}
	return ""
}

// A mode the agent refuses, or a config key that contradicts the mode,
// fails the render naming the value.
func TestHelmNetworkPolicyRefusesABadMode(t *testing.T) {
	for _, set := range [][]string{
		{"networkPolicy.enabled=true", "networkPolicy.enforcingMode=none"},
		{"networkPolicy.enabled=true", "config.NETWORK_POLICY_ENFORCING_MODE=strict"},
	} {
		args := []string{"template", "vpc-cni", chartDir}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		if out, err := helmRun(t, args...); err == nil || !strings.Contains(out, "networkPolicy.enforcingMode") {
			t.Errorf("--set %v: %v, %q; want a failure naming networkPolicy.enforcingMode", set, err, out)
		}
	}
}
