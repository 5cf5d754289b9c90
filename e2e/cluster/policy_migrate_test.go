//go:build cluster

package main

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"
)

// notOnNode1 keeps the DaemonSet's pod, and the agent in it, off node1.
const notOnNode1 = `{"spec":{"template":{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":` +
	`{"nodeSelectorTerms":[{"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"NotIn","values":["node1"]}]}]}}}}}}}`

// A node changing hands with policy on, as in a migration from aws-node:
// the node agent's pod leaves node1 (the servers' node) with its policy
// agent, and vpc-cni's comes, its agent starting on the same bpffs pins and
// veth names. Throughout, np-server answers the allowed client and never
// the denied one: the programs stay on the veths while no agent runs.
func TestNetworkPolicyHoldsWhileTheNodeChangesHands(t *testing.T) {
	if !policyOn() {
		t.Skip("CLUSTER_POLICY=1 runs the network policy agent, its controller and CoreDNS")
	}
	server, open := policyScene(t)
	triesAfter := func(at time.Time, n int) {
		eventually(t, fmt.Sprintf("the clients' %d tries after %s", n, at.Format("15:04:05")), 2*time.Minute, func() (bool, string) {
			a := pollLog(t, "np-client", "allowed")
			got := len(a.between(server, at, time.Now()))
			return got >= n, fmt.Sprintf("%d tries", got)
		})
	}
	// The agent leaves a node whose policies are in place.
	policiesSettled(t, server, open)

	t.Cleanup(func() {
		_, _ = tc.kubectlOut(nil, "-n", "kube-system", "patch", "daemonset", "vpc-cni", "--type", "json",
			"-p", `[{"op":"remove","path":"/spec/template/spec/affinity"}]`)
	})
	k(t, "-n", "kube-system", "patch", "daemonset", "vpc-cni", "--type", "merge", "-p", notOnNode1)
	eventually(t, "no node agent on node1", 3*time.Minute, func() (bool, string) {
		for _, p := range pods(t, "kube-system", "app.kubernetes.io/name=vpc-cni") {
			if p.Spec.NodeName == "node1" {
				return false, p.Metadata.Name + " " + p.Status.Phase
			}
		}
		return true, ""
	})
	gone := time.Now()
	t.Logf("node1 without an agent; its server's veth: %s", tcFilters(t, "np-server", "server"))
	triesAfter(gone, 300) // about 30 s without an agent
	end := time.Now()

	k(t, "-n", "kube-system", "patch", "daemonset", "vpc-cni", "--type", "json", "-p", `[{"op":"remove","path":"/spec/template/spec/affinity"}]`)
	k(t, "-n", "kube-system", "rollout", "status", "daemonset/vpc-cni", "--timeout=5m")
	back := time.Now()
	triesAfter(back, 10)
	checkHeld(t, server, open, gone, end, back)
}

// checkHeld: the denied client never reached np-server; the allowed one was
// answered on every try while node1 had no agent, and after its return; the
// denied client's egress policy holds at the end.
func checkHeld(t *testing.T, server, open string, gone, end, back time.Time) {
	t.Helper()
	allowed, denied := pollLog(t, "np-client", "allowed"), pollLog(t, "np-client", "denied")
	if n := denied.oks(server); n > 0 {
		t.Errorf("the denied client reached np-server %d times", n)
	}
	window := allowed.between(server, gone, end)
	fails := 0
	for _, tr := range window {
		if !tr.ok {
			fails++
		}
	}
	t.Logf("mode %s: node1 without an agent for %s: the allowed client tried np-server %d times, %d failed",
		policyMode(), end.Sub(gone).Round(100*time.Millisecond), len(window), fails)
	if fails > 0 {
		t.Errorf("%d of %d tries of the allowed client failed while node1 had no agent", fails, len(window))
	}
	after := allowed.between(server, back, time.Now())
	if !after[len(after)-1].ok {
		t.Errorf("the allowed client is not answered by np-server after the agent came back")
	}
	if tries := denied.between(open, back, time.Now()); len(tries) == 0 || tries[len(tries)-1].ok {
		t.Errorf("the denied client reaches np-open after the roll: its egress policy is not enforced")
	}
}

// between is url's tries in [from, to].
func (p polled) between(url string, from, to time.Time) []try {
	var out []try
	for _, tr := range p.tries[url] {
		if !tr.at.Before(from) && !tr.at.After(to) {
			out = append(out, tr)
		}
	}
	return out
}

// tcFilters is what tc says is attached to a pod's host veth (named as the
// reference names it), on node1: the agent's programs, if they stayed.
func tcFilters(t *testing.T, ns, name string) string {
	sum := sha1.Sum([]byte(ns + "." + name))
	veth := "eni" + hex.EncodeToString(sum[:])[:11]
	var out []string
	for _, dir := range []string{"ingress", "egress"} {
		b, err := tc.nodes[0].exec("tc", "filter", "show", "dev", veth, dir)
		out = append(out, fmt.Sprintf("%s %s: %s %v", veth, dir, strings.Join(strings.Fields(string(b)), " "), err))
	}
	return strings.Join(out, "; ")
}

// waitedForAgent counts, per node, the ADDs whose plugin log says they
// waited for an absent policy agent.
func waitedForAgent(t *testing.T) string {
	var out []string
	for _, n := range tc.nodes {
		b, _ := n.exec("grep", "-c", "waiting for the network policy agent", "/var/log/vpc-cni/plugin.log")
		out = append(out, n.name+" "+strings.TrimSpace(string(b)))
	}
	return strings.Join(out, ", ")
}
