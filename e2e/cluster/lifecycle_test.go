//go:build cluster

package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
)

// workload is a Deployment of probe pods, spread over both nodes.
func workload(name string, replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s, namespace: default}
spec:
  replicas: %[2]d
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      terminationGracePeriodSeconds: 1
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway, labelSelector: {matchLabels: {app: %[1]s}}}
      containers:
      - {name: probe, image: %[3]s, imagePullPolicy: Never, ports: [{containerPort: 8080}]}
`, name, replicas, probeRef)
}

func deleteDeployment(name string) {
	_, _ = tc.kubectlOut(nil, "delete", "deployment", name, "--wait=true", "--timeout=3m")
}

// room is how many more pods with an address the two nodes take: each
// node's max-pods less the pods it runs now.
func room(t *testing.T) int {
	t.Helper()
	used := 0
	for _, ns := range []string{"default", "kube-system"} {
		for _, p := range pods(t, ns, "") {
			if p.Spec.NodeName != "" && p.Metadata.DeletionTimestamp == nil {
				used++
			}
		}
	}
	return 2*tc.maxPods - used
}

// failedSandboxes counts FailedCreatePodSandBox events of pods whose name
// starts with prefix.
func failedSandboxes(t *testing.T, prefix string) (int, []string) {
	t.Helper()
	var list struct {
		Items []struct {
			Count          int    `json:"count"`
			Message        string `json:"message"`
			InvolvedObject struct {
				Name string `json:"name"`
			} `json:"involvedObject"`
		} `json:"items"`
	}
	out := k(t, "get", "events", "-n", "default", "--field-selector", "reason=FailedCreatePodSandBox", "-o", "json")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	n, msgs := 0, []string(nil)
	for _, e := range list.Items {
		if strings.HasPrefix(e.InvolvedObject.Name, prefix) {
			n += max(e.Count, 1)
			msgs = append(msgs, e.Message)
		}
	}
	return n, msgs
}

// Scaling from 0 to both nodes' capacity in one step: every pod Running,
// and the figures a user asks about (time, failed sandbox attempts).
func TestScaleFromZeroToCapacity(t *testing.T) {
	apply(t, workload("burst", 0))
	t.Cleanup(func() { deleteDeployment("burst") })
	// room counts only the pods that are not going: the going ones must be gone.
	noTestPodsOn(t, "node1", "node2")
	// Nodes at rest: addresses of the previous tests' pods cool for
	// IP_COOLDOWN_PERIOD, and a pod placed meanwhile fails its ADD with
	// code 11 until they are free (the kubelet retries it).
	// kube-system's own pod-network pods (CoreDNS with CLUSTER_POLICY=1) keep theirs.
	for _, nd := range tc.nodes {
		eventually(t, nd.name+" with no pod address assigned or cooling", 3*time.Minute, func() (bool, string) {
			st, own := nodePool(t, nd), systemPodAddresses(t, nd.name)
			return st.Assignments == own && st.count("cooling") == 0,
				fmt.Sprint(st.Assignments, " assigned (", own, " kube-system's), ", st.count("cooling"), " cooling")
		})
	}
	n := room(t)
	t0 := time.Now()
	k(t, "scale", "deployment", "burst", fmt.Sprintf("--replicas=%d", n))
	runningPodsWithin(t, "app=burst", n, 5*time.Minute)
	took := time.Since(t0)
	failed, msgs := failedSandboxes(t, "burst-")
	t.Logf("scale 0 -> %d pods over 2 %s nodes (max-pods %d each): all Running in %s; %d failed sandbox attempts",
		n, instanceType, tc.maxPods, took.Round(100*time.Millisecond), failed)
	for _, m := range msgs {
		t.Logf("failed sandbox: %s", m)
	}
}

// systemPodAddresses counts kube-system's pods on node that have a pod address.
func systemPodAddresses(t *testing.T, node string) int {
	t.Helper()
	n := 0
	for _, p := range pods(t, "kube-system", "") {
		if p.Spec.NodeName == node && !p.Spec.HostNetwork && p.Metadata.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// poolStatus is what `vpcctl pool status -o json` says on a node.
type poolStatus struct {
	Assignments int `json:"assignments"`
	ENIs        []struct {
		Addresses []struct {
			IP    string `json:"ip"`
			State string `json:"state"`
		} `json:"addresses"`
	} `json:"enis"`
}

func nodePool(t *testing.T, n *node) poolStatus {
	t.Helper()
	out, err := n.execEnv(n.sim.Env(), tc.tools.vpcctl, "pool", "status", "-o", "json")
	var st poolStatus
	if err != nil || json.Unmarshal(out, &st) != nil {
		t.Fatalf("%s: vpcctl pool status: %v: %s", n.name, err, out)
	}
	return st
}

func (s poolStatus) count(state string) int {
	n := 0
	for _, e := range s.ENIs {
		for _, a := range e.Addresses {
			if a.State == state {
				n++
			}
		}
	}
	return n
}

func (s poolStatus) state(ip string) string {
	for _, e := range s.ENIs {
		for _, a := range e.Addresses {
			if a.IP == ip {
				return a.State
			}
		}
	}
	return "absent"
}

// leftovers lists what of the pods at ips is still on node n: host veths,
// routes and rules to or from them, CNI cache entries of vpc-cni.
func leftovers(n *node, ips []string) []string {
	var out []string
	h, err := handleIn(n.holder.netns())
	if err != nil {
		return []string{err.Error()}
	}
	defer h.Close()
	links, _ := h.LinkList()
	for _, l := range links {
		if _, ok := l.(*netlink.Veth); ok && strings.HasPrefix(l.Attrs().Name, "eni") {
			out = append(out, "veth "+l.Attrs().Name)
		}
	}
	want := map[string]bool{}
	for _, ip := range ips {
		want[ip] = true
	}
	routes, _ := h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: 0}, netlink.RT_FILTER_TABLE)
	for _, r := range routes {
		if r.Dst != nil && want[r.Dst.IP.String()] {
			out = append(out, "route "+r.String())
		}
	}
	rules, _ := h.RuleList(netlink.FAMILY_V4)
	for _, r := range rules {
		if r.Src != nil && want[r.Src.IP.String()] || r.Dst != nil && want[r.Dst.IP.String()] {
			out = append(out, "rule "+r.String())
		}
	}
	cache, _ := n.exec("sh", "-c", "grep -l '\"vpc-cni\"' /var/lib/cni/results/* 2>/dev/null || true")
	if s := strings.TrimSpace(string(cache)); s != "" {
		out = append(out, "CNI cache "+strings.ReplaceAll(s, "\n", " "))
	}
	return out
}

// Draining a node moves its pods; their addresses cool and come back free
// on the drained node, and nothing of them is left there.
func TestDrainAndDelete(t *testing.T) {
	// The pods of an earlier check may still be going from node2 and take
	// its max-pods: then every drain pod would go to node1.
	noTestPodsOn(t, "node2")
	apply(t, workload("drain", 4))
	t.Cleanup(func() {
		_, _ = tc.kubectlOut(nil, "uncordon", "node2")
		deleteDeployment("drain")
	})
	var gone []string
	for _, p := range runningPods(t, "app=drain", 4) {
		if p.Spec.NodeName == "node2" {
			gone = append(gone, p.Status.PodIP)
		}
	}
	if len(gone) == 0 {
		t.Fatal("no drain pod on node2")
	}
	node2 := tc.nodes[1]
	k(t, "drain", "node2", "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=3m")
	for _, p := range runningPods(t, "app=drain", 4) {
		if p.Spec.NodeName != "node1" {
			t.Fatalf("%s on %s after the drain", p.Metadata.Name, p.Spec.NodeName)
		}
	}
	st := nodePool(t, node2)
	for _, ip := range gone {
		if s := st.state(ip); s != "cooling" && s != "free" {
			t.Errorf("%s after its pod left node2: %s, want cooling (or free)", ip, s)
		}
	}
	eventually(t, "node2's drained addresses free again", 2*time.Minute, func() (bool, string) {
		st := nodePool(t, node2)
		var states []string
		for _, ip := range gone {
			states = append(states, ip+"="+st.state(ip))
		}
		return st.Assignments == 0 && !strings.Contains(strings.Join(states, " "), "=cooling"), strings.Join(states, " ")
	})
	eventually(t, "nothing of the drained pods left on node2", time.Minute, func() (bool, string) {
		left := leftovers(node2, gone)
		return len(left) == 0, strings.Join(left, "; ")
	})
}

// A rolling upgrade of the DaemonSet with pods running: pods on both nodes
// keep answering each other throughout, and pods started during the roll
// all start.
func TestRollingUpgradeKeepsPodsConnected(t *testing.T) {
	apply(t, workload("roll", 4))
	t.Cleanup(func() { deleteDeployment("roll"); deleteDeployment("during") })
	ps := runningPods(t, "app=roll", 4)
	var a, b pod
	for _, p := range ps {
		if p.Spec.NodeName == "node1" {
			a = p
		} else {
			b = p
		}
	}
	if a.Status.PodIP == "" || b.Status.PodIP == "" {
		t.Fatal("roll pods not on both nodes")
	}
	var tries, fails atomic.Int64
	var lastErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, pair := range [][2]pod{{a, b}, {b, a}} {
		wg.Add(1)
		go func(from, to pod, ns string) {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				tries.Add(1)
				if out, err := getFrom(ns, "http://"+to.Status.PodIP+":8080/"); err != nil || caller(out) != from.Status.PodIP {
					fails.Add(1)
					lastErr.Store(fmt.Sprintf("%s -> %s: %v %q", from.Metadata.Name, to.Metadata.Name, err, out))
				}
				time.Sleep(200 * time.Millisecond)
			}
		}(pair[0], pair[1], podNetns(t, pair[0]))
	}
	k(t, "-n", "kube-system", "rollout", "restart", "daemonset/vpc-cni")
	apply(t, workload("during", 4))
	k(t, "-n", "kube-system", "rollout", "status", "daemonset/vpc-cni", "--timeout=5m")
	runningPods(t, "app=during", 4)
	close(stop)
	wg.Wait()
	t.Logf("during the roll: %d requests between pods on the two nodes, %d failed", tries.Load(), fails.Load())
	if fails.Load() > 0 {
		t.Errorf("%d of %d requests failed during the roll; last: %v", fails.Load(), tries.Load(), lastErr.Load())
	}
	if n, msgs := failedSandboxes(t, "during-"); n > 0 {
		t.Errorf("%d failed sandbox attempts during the roll: %v", n, msgs)
	}
	if policyOn() {
		t.Logf("ADDs that waited for the restarting policy agent: %s", waitedForAgent(t))
	}
}

// podNetns is the network namespace of a pod's sandbox, found on its node
// by the pod's address (the host route to it names the veth; the veth's
// peer is in the pod's namespace, which a process of the pod holds).
func podNetns(t *testing.T, p pod) string {
	t.Helper()
	var n *node
	for _, x := range tc.nodes {
		if x.name == p.Spec.NodeName {
			n = x
		}
	}
	out, err := n.exec("sh", "-c", fmt.Sprintf(
		"for f in /run/netns/cni-*; do ip netns exec $(basename $f) ip -o -4 addr show 2>/dev/null | grep -q ' %s/' && echo $f; done; true",
		p.Status.PodIP))
	path := strings.TrimSpace(string(out))
	if err != nil || path == "" || strings.Contains(path, "\n") {
		t.Fatalf("netns of %s (%s) on %s: %v %q", p.Metadata.Name, p.Status.PodIP, n.name, err, out)
	}
	// The node's /run is its own tmpfs: reach the file through the holder.
	return filepath.Join(fmt.Sprintf("/proc/%d/root", n.holder.pid), path)
}

// runningPodsWithin is runningPods with its own timeout.
func runningPodsWithin(t *testing.T, selector string, want int, timeout time.Duration) []pod {
	t.Helper()
	var got []pod
	eventually(t, fmt.Sprintf("%d Running pods %s", want, selector), timeout, func() (bool, string) {
		got = nil
		phases := map[string]int{}
		for _, p := range pods(t, "default", selector) {
			phases[p.Status.Phase]++
			if p.Status.Phase == "Running" && p.Status.PodIP != "" && p.Metadata.DeletionTimestamp == nil {
				got = append(got, p)
			}
		}
		return len(got) == want, fmt.Sprint(phases)
	})
	return got
}

// What the DaemonSet's passes do from inside its sandbox takes effect: the
// privileged install set rp_filter, and the confined loop puts back the
// nftables table, the fwmark rule and an ENI's route table that another
// program removed (within two of its passes).
func TestTheLoopRepairsTheNodeFromItsSandbox(t *testing.T) {
	n := tc.nodes[0]
	if out, _ := n.exec("cat", "/proc/sys/net/ipv4/conf/eth0/rp_filter"); strings.TrimSpace(string(out)) != "2" {
		t.Errorf("rp_filter of eth0 on %s is %q; the install init container sets 2", n.name, out)
	}
	script := "nft delete table ip vpc-cni && ip rule del fwmark 0x80/0x80 lookup main prio 1024 && " +
		"for t in $(ip -o rule | sed -n 's/.*lookup \\([0-9][0-9]*\\).*/\\1/p' | sort -u); do ip route flush table $t; done"
	if out, err := n.exec("sh", "-c", script); err != nil {
		t.Fatalf("removing the node's rules: %v: %s", err, out)
	}
	eventually(t, "the loop's repair of table, fwmark rule and ENI tables", 3*time.Minute, func() (bool, string) {
		out, _ := n.exec("sh", "-c", "nft list table ip vpc-cni >/dev/null && echo table; ip rule | grep -c 'fwmark 0x80/0x80'; "+
			"for t in $(ip -o rule | sed -n 's/.*lookup \\([0-9][0-9]*\\).*/\\1/p' | sort -u); do ip route show table $t | grep -q default || echo empty $t; done")
		s := string(out)
		return strings.HasPrefix(s, "table\n1\n") && !strings.Contains(s, "empty"), s
	})
}
