//go:build cluster

package main

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// probeBin is the test pods' binary on the machine (the nodes see /tmp).
func probeBin() string { return filepath.Join(tc.dir, "images", "src", "probe", "probe") }

// getFrom runs `probe get url` in the network namespace at nsPath and
// returns the answer, "<server hostname> <caller ip:port>".
func getFrom(nsPath, url string) (string, error) {
	out, err := exec.Command("nsenter", "--net="+nsPath, "--", probeBin(), "get", url).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// caller is the address the server saw in a probe answer.
func caller(answer string) string {
	f := strings.Fields(answer)
	if len(f) != 2 {
		return ""
	}
	host, _, _ := strings.Cut(f[1], ":")
	return host
}

// serveOutside runs the probe server on a VPC host that is not a node (the
// control plane's namespace, 100.64.250.10), until the test ends.
func serveOutside(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("nsenter", "--net="+tc.ctl.netns(), "--", probeBin(), "serve")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	url := "http://" + ctlIP.String() + ":8080/"
	eventually(t, "the probe server outside the cluster", time.Minute, func() (bool, string) {
		out, err := getFrom(tc.ctl.netns(), url)
		return err == nil, out
	})
	return url
}

func nodeNS(name string) string {
	for _, n := range tc.nodes {
		if n.name == name {
			return n.holder.netns()
		}
	}
	panic("no node " + name)
}

const probeService = `apiVersion: v1
kind: Service
metadata: {name: probe, namespace: default}
spec:
  selector: {app: probe}
  ports: [{port: 80, targetPort: 8080}]
`

// Beyond pod to pod: a node reaches a pod on the other node (the pod sees
// the node's primary address), a pod reaches a VPC host outside the
// cluster with its own address, and a ClusterIP Service answers pods on
// both nodes through kube-proxy, from backends on both nodes.
func TestPodsNodesServicesAndTheVPC(t *testing.T) {
	apply(t, probeDeployment)
	apply(t, probeService)
	t.Cleanup(func() {
		_, _ = tc.kubectlOut(nil, "delete", "service", "probe")
		_, _ = tc.kubectlOut(nil, "delete", "deployment", "probe", "--wait=true")
	})
	byNode := map[string]pod{}
	for _, p := range runningPods(t, "app=probe", 4) {
		byNode[p.Spec.NodeName] = p
	}
	if len(byNode) != 2 {
		t.Fatalf("probe pods on %d nodes, want 2", len(byNode))
	}
	t.Run("node to a pod on the other node", func(t *testing.T) {
		for from, to := range map[string]string{"node1": "node2", "node2": "node1"} {
			out, err := getFrom(nodeNS(from), "http://"+byNode[to].Status.PodIP+":8080/")
			want := nodePrimary(map[string]int{"node1": 1, "node2": 2}[from]).String()
			if err != nil || caller(out) != want {
				t.Errorf("%s -> pod %s: %v %q; want an answer seeing %s", from, byNode[to].Status.PodIP, err, out, want)
			}
		}
	})
	t.Run("pod to a VPC host outside the cluster keeps its address", func(t *testing.T) {
		url := serveOutside(t)
		for _, p := range byNode {
			out, err := tc.kubectlOut(nil, "exec", p.Metadata.Name, "--", "/probe", "get", url)
			if err != nil || caller(string(out)) != p.Status.PodIP {
				t.Errorf("%s (%s) -> %s: %v %q", p.Metadata.Name, p.Status.PodIP, url, err, out)
			}
		}
	})
	t.Run("a ClusterIP Service from pods on both nodes", func(t *testing.T) {
		ip := k(t, "get", "service", "probe", "-o", "jsonpath={.spec.clusterIP}")
		if _, err := netip.ParseAddr(ip); err != nil {
			t.Fatalf("service probe has cluster IP %q", ip)
		}
		serviceAnswers(t, "probe", ip, 4, byNode)
		for node, p := range byNode {
			backends := map[string]bool{}
			// kube-proxy spreads connections at random over the 4 backends:
			// 40 tries reach both nodes' pods but with a chance of 2^-39.
			for i := 0; i < 40 && len(backends) < 2; i++ {
				out, err := tc.kubectlOut(nil, "exec", p.Metadata.Name, "--", "/probe", "get", "http://"+ip+"/")
				if err != nil {
					t.Fatalf("from %s on %s to %s: %v", p.Metadata.Name, node, ip, err)
				}
				backends[backendNode(t, strings.Fields(string(out))[0])] = true
			}
			if len(backends) != 2 {
				t.Errorf("from %s: the Service answered only from pods on %v", node, backends)
			}
		}
	})
}

// serviceAnswers waits until the Service's EndpointSlices hold want ready
// endpoints and the Service answers a pod on each node once: a new Service
// reaches kube-proxy's rules some time after it exists, and until then its
// cluster IP refuses connections.
func serviceAnswers(t *testing.T, service, ip string, want int, byNode map[string]pod) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d ready endpoints of Service %s", want, service), time.Minute, func() (bool, string) {
		out := k(t, "get", "endpointslices", "-l", "kubernetes.io/service-name="+service,
			"-o", `jsonpath={range .items[*].endpoints[?(@.conditions.ready==true)]}{.addresses[0]} {end}`)
		return len(strings.Fields(out)) == want, out
	})
	for node, p := range byNode {
		eventually(t, fmt.Sprintf("Service %s answering %s on %s", service, p.Metadata.Name, node), time.Minute, func() (bool, string) {
			out, err := tc.kubectlOut(nil, "exec", p.Metadata.Name, "--", "/probe", "get", "http://"+ip+"/")
			return err == nil, fmt.Sprintf("%v %s", err, out)
		})
	}
}

// backendNode is the node of the pod named name.
func backendNode(t *testing.T, name string) string {
	t.Helper()
	n := k(t, "get", "pod", name, "-o", "jsonpath={.spec.nodeName}")
	if n == "" {
		t.Fatalf("pod %s has no node", name)
	}
	return n
}

// The kubelet's capacity comes from the boot unit's drop-in: capacity.pods
// is what `vpcctl max-pods` says for the node.
func TestNodeCapacityIsVpcctlMaxPods(t *testing.T) {
	for _, n := range tc.nodes {
		got := k(t, "get", "node", n.name, "-o", "jsonpath={.status.capacity.pods}")
		out, err := n.execEnv(n.sim.Env(), tc.tools.vpcctl, "max-pods", "-o", "json")
		if err != nil {
			t.Fatalf("%s: vpcctl max-pods: %v: %s", n.name, err, out)
		}
		var mp struct {
			MaxPods int `json:"maxPods"`
		}
		if err := json.Unmarshal(out, &mp); err != nil {
			t.Fatalf("%s: vpcctl max-pods -o json: %v: %s", n.name, err, out)
		}
		if got != fmt.Sprint(mp.MaxPods) || mp.MaxPods != tc.maxPods {
			t.Errorf("%s: capacity.pods %s; vpcctl max-pods on the node says %d, from the instance table %d",
				n.name, got, mp.MaxPods, tc.maxPods)
		}
	}
}
