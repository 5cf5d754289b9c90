//go:build cluster

package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Two namespaces on two nodes: np-server's pods take ingress only from
// np-client's role=allowed pods; role=denied pods may reach np-server only;
// np-open takes everything. Every pod is selected by a policy, so both modes
// agree on what the settled policy allows.
const policyNamespaces = `apiVersion: v1
kind: Namespace
metadata: {name: np-server}
---
apiVersion: v1
kind: Namespace
metadata: {name: np-client}
---
apiVersion: v1
kind: Namespace
metadata: {name: np-open}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: default-deny, namespace: np-server}
spec: {podSelector: {}, policyTypes: [Ingress]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: from-allowed-clients, namespace: np-server}
spec:
  podSelector: {matchLabels: {app: server}}
  policyTypes: [Ingress]
  ingress:
  - from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: np-client}}, podSelector: {matchLabels: {role: allowed}}}]
    ports: [{port: 8080, protocol: TCP}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: open, namespace: np-open}
spec: {podSelector: {}, policyTypes: [Ingress], ingress: [{}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allowed-egress, namespace: np-client}
spec: {podSelector: {matchLabels: {role: allowed}}, policyTypes: [Egress], egress: [{}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: denied-egress, namespace: np-client}
spec:
  podSelector: {matchLabels: {role: denied}}
  policyTypes: [Egress]
  egress: [{to: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: np-server}}}]}]
`

// policyPod is a probe pod on node: a server, or a client polling urls.
func policyPod(ns, name, node string, labels map[string]string, urls ...string) string {
	var l []string
	for k, v := range labels {
		l = append(l, k+": "+v)
	}
	args := ""
	if len(urls) > 0 {
		args = fmt.Sprintf("\n    command: [/probe, poll, %s]", strings.Join(urls, ", "))
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: %s, labels: {%s}}
spec:
  nodeSelector: {kubernetes.io/hostname: %s}
  terminationGracePeriodSeconds: 0
  containers:
  - name: probe
    image: %s
    imagePullPolicy: Never%s
`, name, ns, strings.Join(l, ", "), node, probeRef, args)
}

// polled is a poll log: when it started, and per URL its tries in order.
type polled struct {
	start time.Time
	tries map[string][]try
}

type try struct {
	at time.Time
	ok bool
}

func pollLog(t *testing.T, ns, name string) polled {
	t.Helper()
	p := polled{tries: map[string][]try{}}
	for _, line := range strings.Split(k(t, "logs", "-n", ns, name), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		at := time.Unix(0, n)
		if f[1] == "start" {
			p.start = at
		} else if len(f) == 3 {
			p.tries[f[2]] = append(p.tries[f[2]], try{at, f[1] == "ok"})
		}
	}
	return p
}

// firstOK is the time from the poller's start to its first answer from url.
func (p polled) firstOK(url string) (time.Duration, bool) {
	for _, tr := range p.tries[url] {
		if tr.ok {
			return tr.at.Sub(p.start), true
		}
	}
	return 0, false
}

func (p polled) oks(url string) int {
	n := 0
	for _, tr := range p.tries[url] {
		if tr.ok {
			n++
		}
	}
	return n
}

func podIP(t *testing.T, ns, name string) string {
	t.Helper()
	var ip string
	eventually(t, ns+"/"+name+" Running", 3*time.Minute, func() (bool, string) {
		for _, p := range pods(t, ns, "") {
			if p.Metadata.Name == name && p.Status.Phase == "Running" && p.Status.PodIP != "" {
				ip = p.Status.PodIP
				return true, ""
			}
		}
		return false, "not Running"
	})
	return ip
}

// Clients started on node2 after the policies, servers on node1. The
// allowed client reaches both servers; the denied one never reaches
// np-server, and in strict mode never np-open either (its own egress is
// denied from its first packet: no window before the agent programs it).
func TestNetworkPolicyAcrossNodes(t *testing.T) {
	if !policyOn() {
		t.Skip("CLUSTER_POLICY=1 runs the network policy agent, its controller and CoreDNS")
	}
	server, open := policyScene(t)
	allowed, denied := policiesSettled(t, server, open)
	d, _ := allowed.firstOK(server)
	t.Logf("mode %s: allowed client's first answer from np-server %s after its start (%d tries before)",
		policyMode(), d.Round(10*time.Millisecond), len(allowed.tries[server])-allowed.oks(server))
	if n := denied.oks(server); n > 0 {
		t.Errorf("the denied client reached np-server %d times", n)
	}
	n := denied.oks(open)
	t.Logf("mode %s: the denied client reached np-open %d of %d tries", policyMode(), n, len(denied.tries[open]))
	if policyMode() == "strict" && n > 0 {
		t.Errorf("strict mode: the denied client reached np-open %d times before its policy held", n)
	}
}

// policiesSettled waits until the policies hold for the clients: the
// allowed one answered 10 times by both servers, and the denied one's
// egress policy enforced (its last 5 of at least 10 tries to np-open
// failed). In standard mode that policy takes effect some time after the
// client's start, when the controller and the agent have its address; an
// egress policy never enforced fails here.
func policiesSettled(t *testing.T, server, open string) (allowed, denied polled) {
	t.Helper()
	eventually(t, "the allowed client answered 10 times by both servers and the denied client's egress policy enforced",
		2*time.Minute, func() (bool, string) {
			allowed, denied = pollLog(t, "np-client", "allowed"), pollLog(t, "np-client", "denied")
			tail := denied.tries[open][max(0, len(denied.tries[open])-5):]
			enforced, last := len(denied.tries[open]) >= 10, ""
			for _, tr := range tail {
				enforced = enforced && !tr.ok
				last += map[bool]string{true: " ok", false: " fail"}[tr.ok]
			}
			return allowed.oks(server) >= 10 && allowed.oks(open) >= 10 && enforced,
				fmt.Sprintf("allowed: %d/%d answers; denied to np-open: %d tries, the last:%s",
					allowed.oks(server), allowed.oks(open), len(denied.tries[open]), last)
		})
	return allowed, denied
}

// policyScene applies the policies, the servers on node1, then the clients
// on node2 polling them; it returns the two servers' URLs.
func policyScene(t *testing.T) (server, open string) {
	t.Helper()
	apply(t, policyNamespaces)
	t.Cleanup(func() {
		_, _ = tc.kubectlOut(nil, "delete", "namespace", "np-server", "np-client", "np-open", "--wait=true")
	})
	defaultServiceAccounts(t, "np-server", "np-client", "np-open")
	apply(t, policyPod("np-server", "server", "node1", map[string]string{"app": "server"}))
	apply(t, policyPod("np-open", "open", "node1", map[string]string{"app": "open"}))
	server = "http://" + podIP(t, "np-server", "server") + ":8080/"
	open = "http://" + podIP(t, "np-open", "open") + ":8080/"
	serverPolicyInForce(t, server, open)
	apply(t, policyPod("np-client", "allowed", "node2", map[string]string{"role": "allowed"}, server, open))
	apply(t, policyPod("np-client", "denied", "node2", map[string]string{"role": "denied"}, server, open))
	podIP(t, "np-client", "allowed")
	podIP(t, "np-client", "denied")
	return server, open
}

// serverPolicyInForce waits until np-server's ingress policy holds: a VPC
// host outside the cluster that np-open answers gets no answer from
// np-server (its packets dropped: a timeout, not a refusal). In standard
// mode a new pod takes every packet until the agent has its policies (the
// reference's documented window), so the clients start only after that.
func serverPolicyInForce(t *testing.T, server, open string) {
	t.Helper()
	eventually(t, "np-server's ingress policy in force (a host np-open answers gets no answer)", 2*time.Minute, func() (bool, string) {
		o, oerr := getFrom(tc.ctl.netns(), open)
		s, serr := getFrom(tc.ctl.netns(), server)
		dropped := serr != nil && (strings.Contains(s, "Timeout") || strings.Contains(s, "deadline exceeded"))
		return oerr == nil && dropped, fmt.Sprintf("np-open: %v %q; np-server: %v %q", oerr, o, serr, s)
	})
}

// defaultServiceAccounts waits for each namespace's default ServiceAccount:
// the controller-manager makes it some time after the namespace, and until
// then the API server refuses the namespace's pods ("error looking up
// service account").
func defaultServiceAccounts(t *testing.T, namespaces ...string) {
	t.Helper()
	for _, ns := range namespaces {
		eventually(t, "the default ServiceAccount of namespace "+ns, time.Minute, func() (bool, string) {
			_, err := tc.kubectlOut(nil, "get", "serviceaccount", "default", "-n", ns)
			return err == nil, fmt.Sprint(err)
		})
	}
}
