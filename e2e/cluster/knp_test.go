//go:build cluster

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"vpc-cni/internal/testsupport/gotool"
)

// kube-network-policies (KNP), the CNI-agnostic engine, as the Go module
// proxy serves it.
const knpModule, knpVersion = "sigs.k8s.io/kube-network-policies", "v0.8.0"

// knpTable is the table KNP owns (its controller.go).
const knpTable = "inet kube-network-policies"

// knpRules is KNP v0.8.0's table as its controller writes it
// (syncNFTablesRules and addDNSRacersWorkaroundRules in
// pkg/networkpolicy/controller.go, default flags), in nft's syntax: %[1]s is
// the set's elements, %[2]s the verdict on a selected pod's new packets
// (KNP's "queue num 100").
const knpRules = `table inet kube-network-policies {
  set podips-v4 { type ipv4_addr; elements = { %[1]s } }
  set podips-v6 { type ipv6_addr; }
  chain postrouting {
    type filter hook postrouting priority srcnat - 5; policy accept;
    meta l4proto udp th dport 53 accept
    meta nfproto ipv6 meta l4proto ipv6-icmp accept
    meta skuid 0 accept
    ct state established,related accept
    ip saddr @podips-v4 %[2]s
    ip daddr @podips-v4 %[2]s
    ip6 saddr @podips-v6 %[2]s
    ip6 daddr @podips-v6 %[2]s
  }
  chain prerouting {
    type filter hook prerouting priority dstnat + 5; policy accept;
    meta l4proto != udp accept
    udp dport != 53 accept
    ip saddr @podips-v4 %[2]s
    ip daddr @podips-v4 %[2]s
    ip6 saddr @podips-v6 %[2]s
    ip6 daddr @podips-v6 %[2]s
  }
}
`

// kube-network-policies beside vpc-cni on node1, as far as this kernel lets
// it run. KNP's own process starts and fails to write its table: the
// kernel has no nft_queue. Its table as it writes it is refused by nft for
// the same reason; with each queue verdict made a counter it loads beside
// vpc-cni's table, with the policy-selected pods' addresses from their
// status (vpc-cni's CNI result): its chains see those pods' packets,
// vpc-cni's table is unchanged, pods keep answering, a new pod starts.
func TestKubeNetworkPoliciesBesideVPCCNI(t *testing.T) {
	if os.Getenv("CLUSTER_KNP") != "1" {
		t.Skip("CLUSTER_KNP=1 builds and runs kube-network-policies " + knpVersion)
	}
	bin, err := gotool.BuildModule(gotool.Module{Name: "kube-network-policies", Version: knpVersion, Require: knpModule,
		Packages: []string{knpModule + "/cmd"}, LDFlags: "-s -w"}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	server, _ := policyScene(t)
	vpcBefore := nftList(t, "table", "ip", "vpc-cni")
	runKNP(t, bin)
	ips := statusIPs(t, "np-server", "server") + ", " + statusIPs(t, "np-open", "open")
	loadKNPTable(t, ips)
	t.Cleanup(func() { _, _ = tc.nodes[0].exec("nft", "delete", "table", "inet", "kube-network-policies") })

	apply(t, policyPod("np-open", "late", "node1", map[string]string{"app": "open"}))
	podIP(t, "np-open", "late")
	start := time.Now()
	eventually(t, "the allowed client answered by np-server beside KNP's table", time.Minute, func() (bool, string) {
		tries := pollLog(t, "np-client", "allowed").between(server, start, time.Now())
		return len(tries) >= 10 && tries[len(tries)-1].ok, fmt.Sprintf("%d tries", len(tries))
	})
	chain := nftList(t, "table", knpFamily, knpName)
	if !regexp.MustCompile(`ip daddr @podips-v4 counter packets [1-9]`).MatchString(chain) {
		t.Errorf("KNP's chains saw no packet to a selected pod:\n%s", chain)
	}
	if after := nftList(t, "table", "ip", "vpc-cni"); stripCounters(after) != stripCounters(vpcBefore) {
		t.Errorf("vpc-cni's table changed beside KNP's:\nbefore\n%s\nafter\n%s", vpcBefore, after)
	}
	t.Logf("KNP's table beside vpc-cni's on node1:\n%s", chain)
}

const knpFamily, knpName = "inet", "kube-network-policies"

// runKNP runs KNP on node1 until it has tried to write its table, and logs
// what it says.
func runKNP(t *testing.T, bin string) {
	t.Helper()
	env := knpInCluster(t)
	p, err := tc.procs.start("knp-node1", tc.nodes[0].holder.pid, true, env,
		filepath.Join(bin, "cmd"), "--hostname-override", "node1", "--v", "2")
	if err != nil {
		t.Fatal(err)
	}
	defer p.stop(10 * time.Second)
	var log string
	eventually(t, "KNP's attempt to write its table", 2*time.Minute, func() (bool, string) {
		b, _ := os.ReadFile(p.log)
		log = string(b)
		if p.exited() {
			t.Fatalf("KNP exited:\n%s", lastLines(log, 20))
		}
		return strings.Contains(log, "syncing nftables rules"), lastLines(log, 3)
	})
	t.Logf("KNP v0.8.0 on node1 (its log's last lines):\n%s", lastLines(log, 12))
}

// knpInCluster gives KNP, which reads only the in-cluster configuration,
// a service account's token and the cluster's CA where a pod has them (in
// node1's own /run), and the API server's address; it returns the env.
func knpInCluster(t *testing.T) []string {
	t.Helper()
	apply(t, `apiVersion: v1
kind: ServiceAccount
metadata: {name: knp, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: knp-test}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{kind: ServiceAccount, name: knp, namespace: kube-system}]
`)
	dir := t.TempDir()
	token := k(t, "-n", "kube-system", "create", "token", "knp")
	ca, err := os.ReadFile(k(t, "config", "view", "-o", "jsonpath={.clusters[0].cluster.certificate-authority}"))
	if err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(dir, "token"), []byte(strings.TrimSpace(token)), 0o600)
	_ = os.WriteFile(filepath.Join(dir, "ca.crt"), ca, 0o644)
	const sa = "/var/run/secrets/kubernetes.io/serviceaccount"
	if out, err := tc.nodes[0].exec("sh", "-c", "mkdir -p "+sa+" && cp "+dir+"/token "+dir+"/ca.crt "+sa); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	t.Cleanup(func() {
		_, _ = tc.nodes[0].exec("rm", "-rf", "/var/run/secrets")
		_, _ = tc.kubectlOut(nil, "delete", "clusterrolebinding", "knp-test")
	})
	// The API server as the nodes reach it (the test's kubeconfig goes through a host-side proxy).
	return []string{"KUBERNETES_SERVICE_HOST=" + ctlIP.String(), "KUBERNETES_SERVICE_PORT=6443"}
}

// statusIPs is a pod's status.podIPs, as nft set elements.
func statusIPs(t *testing.T, ns, name string) string {
	t.Helper()
	out := strings.Fields(k(t, "get", "pod", "-n", ns, name, "-o", "jsonpath={.status.podIPs[*].ip}"))
	if len(out) == 0 {
		t.Fatalf("%s/%s has no IP in its status", ns, name)
	}
	return strings.Join(out, ", ")
}

// loadKNPTable loads KNP's table on node1: as KNP writes it the kernel
// refuses it (no nft_queue); with counters in place of the queue verdicts
// it loads beside vpc-cni's.
func loadKNPTable(t *testing.T, ips string) {
	t.Helper()
	dir := t.TempDir()
	for _, verdict := range []string{"queue num 100", "counter"} {
		f := filepath.Join(dir, strings.ReplaceAll(verdict, " ", "-")+".nft")
		if err := os.WriteFile(f, []byte(fmt.Sprintf(knpRules, ips, verdict)), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := tc.nodes[0].exec("nft", "-f", f)
		t.Logf("nft -f KNP's table with %q: %v %s", verdict, err, strings.TrimSpace(string(out)))
		if verdict == "counter" && err != nil {
			t.Fatalf("KNP's table without queue verdicts does not load beside vpc-cni's")
		}
	}
	tables := nftList(t, "tables")
	if !strings.Contains(tables, knpTable) || !strings.Contains(tables, "ip vpc-cni") {
		t.Fatalf("node1's tables: %s", tables)
	}
}

func nftList(t *testing.T, what ...string) string {
	t.Helper()
	out, err := tc.nodes[0].exec(append([]string{"nft", "list"}, what...)...)
	if err != nil {
		t.Fatalf("nft list %v: %v %s", what, err, out)
	}
	return string(out)
}

var counters = regexp.MustCompile(`counter packets [0-9]+ bytes [0-9]+`)

func stripCounters(s string) string { return counters.ReplaceAllString(s, "counter") }

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
