//go:build cluster

package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The cluster tier (make test-cluster): one cluster for the whole run,
// checked through the API as a user would, with kubectl.
var (
	watch = flag.Duration("cluster.watch", 10*time.Minute, "how long the full node is watched")
	keep  = flag.Bool("cluster.keep", false, "leave the cluster up after the tests (make cluster-down removes it)")
	tc    *cluster
)

func TestMain(m *testing.M) {
	flag.Parse()
	if os.Geteuid() != 0 {
		fmt.Println("the cluster tier needs root (network and mount namespaces)")
		os.Exit(1)
	}
	netOnly = new(bool)
	dir, err := os.MkdirTemp("", "vpc-cni-cluster-test-")
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	repo, err := repoRoot()
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	tc = &cluster{dir: dir, repo: repo, log: os.Stderr, procs: &procs{dir: dir}, kubeconfig: dir + "/admin.kubeconfig"}
	stop := make(chan os.Signal, 1)
	t0 := time.Now()
	err = tc.bringUp(stop)
	code := 1
	if err != nil {
		fmt.Println("bringing the cluster up:", err)
	} else {
		fmt.Printf("cluster up in %s; KUBECONFIG=%s\n", time.Since(t0).Round(time.Second), tc.kubeconfig)
		code = m.Run()
	}
	if *keep && err == nil {
		_ = os.WriteFile(dir+"/up.pid", []byte(fmt.Sprint(os.Getpid())), 0o644)
		fmt.Printf("kept: export KUBECONFIG=%s; make cluster-down CLUSTER_DIR=%s\n", tc.kubeconfig, dir)
		s := make(chan os.Signal, 1)
		signalNotify(s)
		<-s
	}
	stop <- syscall.SIGTERM
	tc.teardown()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// k runs kubectl and fails the test on error.
func k(t *testing.T, args ...string) string {
	t.Helper()
	out, err := tc.kubectlOut(nil, args...)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func apply(t *testing.T, manifest string) {
	t.Helper()
	if _, err := tc.kubectlOut([]byte(manifest), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond every half second until it holds or timeout.
func eventually(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not in %s; last: %s", what, timeout, state)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

type pod struct {
	Metadata struct {
		Name              string            `json:"name"`
		Namespace         string            `json:"namespace"`
		Labels            map[string]string `json:"labels"`
		DeletionTimestamp *string           `json:"deletionTimestamp"`
	} `json:"metadata"`
	Spec struct {
		NodeName    string `json:"nodeName"`
		HostNetwork bool   `json:"hostNetwork"`
	} `json:"spec"`
	Status struct {
		Phase                 string `json:"phase"`
		PodIP                 string `json:"podIP"`
		InitContainerStatuses []struct {
			Name  string `json:"name"`
			State struct {
				Terminated *struct {
					FinishedAt time.Time `json:"finishedAt"`
					ExitCode   int       `json:"exitCode"`
				} `json:"terminated"`
			} `json:"state"`
		} `json:"initContainerStatuses"`
		ContainerStatuses []struct {
			Ready bool `json:"ready"`
			State struct {
				Waiting *struct {
					Reason string `json:"reason"`
				} `json:"waiting"`
			} `json:"state"`
		} `json:"containerStatuses"`
		Conditions []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Reason string `json:"reason"`
		} `json:"conditions"`
	} `json:"status"`
}

func pods(t *testing.T, ns, selector string) []pod {
	t.Helper()
	args := []string{"get", "pods", "-n", ns, "-o", "json"}
	if selector != "" {
		args = append(args, "-l", selector)
	}
	var list struct{ Items []pod }
	if err := json.Unmarshal([]byte(k(t, args...)), &list); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// noTestPodsOn waits until the nodes hold no pod outside kube-system, not
// even a Terminating one: an earlier check's pods keep their max-pods slots
// (the scheduler counts them) and addresses until they are gone.
func noTestPodsOn(t *testing.T, nodes ...string) {
	t.Helper()
	eventually(t, fmt.Sprintf("no test pods left on %v", nodes), 3*time.Minute, func() (bool, string) {
		var list struct{ Items []pod }
		if err := json.Unmarshal([]byte(k(t, "get", "pods", "-A", "-o", "json")), &list); err != nil {
			t.Fatal(err)
		}
		var left []string
		for _, p := range list.Items {
			if p.Metadata.Namespace != "kube-system" && slices.Contains(nodes, p.Spec.NodeName) {
				left = append(left, p.Metadata.Namespace+"/"+p.Metadata.Name+" on "+p.Spec.NodeName)
			}
		}
		return len(left) == 0, strings.Join(left, " ")
	})
}

type nodeObj struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Taints []struct {
			Key    string `json:"key"`
			Effect string `json:"effect"`
		} `json:"taints"`
	} `json:"spec"`
	Status struct {
		Conditions []struct {
			Type               string    `json:"type"`
			Status             string    `json:"status"`
			LastTransitionTime time.Time `json:"lastTransitionTime"`
			Message            string    `json:"message"`
		} `json:"conditions"`
	} `json:"status"`
}

func getNode(t *testing.T, name string) nodeObj {
	t.Helper()
	var n nodeObj
	if err := json.Unmarshal([]byte(k(t, "get", "node", name, "-o", "json")), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (n nodeObj) ready() (bool, time.Time, string) {
	for _, c := range n.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True", c.LastTransitionTime, c.Message
		}
	}
	return false, time.Time{}, "no Ready condition"
}

// The DaemonSet runs on both nodes, and each node turned Ready only after
// its vpc-cni pod's install (which writes the conflist last, once the pool
// can serve) finished.
func TestDaemonSetOnBothNodesAndReadyAfterThePool(t *testing.T) {
	eventually(t, "vpc-cni DaemonSet ready on 2 nodes", 3*time.Minute, func() (bool, string) {
		out := k(t, "get", "ds", "-n", "kube-system", "vpc-cni", "-o", "jsonpath={.status.numberReady}/{.status.desiredNumberScheduled}")
		return out == "2/2", out
	})
	seen := map[string]bool{}
	for _, p := range pods(t, "kube-system", "app.kubernetes.io/name=vpc-cni") {
		seen[p.Spec.NodeName] = true
		var installed time.Time
		for _, s := range p.Status.InitContainerStatuses {
			if s.Name == "install" && s.State.Terminated != nil && s.State.Terminated.ExitCode == 0 {
				installed = s.State.Terminated.FinishedAt
			}
		}
		if installed.IsZero() {
			t.Fatalf("%s: the install init container has not succeeded: %+v", p.Metadata.Name, p.Status.InitContainerStatuses)
		}
		ready, since, msg := getNode(t, p.Spec.NodeName).ready()
		if !ready {
			t.Fatalf("%s not Ready: %s", p.Spec.NodeName, msg)
		}
		// API times have second precision: Ready at or after the install's end.
		if since.Before(installed.Truncate(time.Second)) {
			t.Errorf("%s turned Ready at %s, before vpc-cni's install finished at %s", p.Spec.NodeName, since, installed)
		}
	}
	if !seen["node1"] || !seen["node2"] {
		t.Fatalf("vpc-cni pods on %v, want node1 and node2", seen)
	}
}

const probeDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: probe, namespace: default}
spec:
  replicas: 4
  selector: {matchLabels: {app: probe}}
  template:
    metadata: {labels: {app: probe}}
    spec:
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: probe}}}
      containers:
      - {name: probe, image: ` + probeRef + `, imagePullPolicy: Never, ports: [{containerPort: 8080}]}
`

func runningPods(t *testing.T, selector string, want int) []pod {
	t.Helper()
	var got []pod
	eventually(t, fmt.Sprintf("%d Running pods %s", want, selector), 3*time.Minute, func() (bool, string) {
		got = nil
		var states []string
		for _, p := range pods(t, "default", selector) {
			states = append(states, p.Metadata.Name+"="+p.Status.Phase)
			if p.Status.Phase == "Running" && p.Status.PodIP != "" && p.Metadata.DeletionTimestamp == nil {
				got = append(got, p)
			}
		}
		return len(got) == want, strings.Join(states, " ")
	})
	return got
}

// A Deployment spread over both nodes: every pod has an address of its
// node's subnet (its node's ENIs), and pods reach each other across nodes,
// seeing each other's own address.
func TestDeploymentAcrossNodesWithVPCAddresses(t *testing.T) {
	apply(t, probeDeployment)
	t.Cleanup(func() { _, _ = tc.kubectlOut(nil, "delete", "deployment", "probe", "--wait=true") })
	ps := runningPods(t, "app=probe", 4)
	byNode := map[string][]pod{}
	for _, p := range ps {
		ip := netip.MustParseAddr(p.Status.PodIP)
		i := map[string]int{"node1": 1, "node2": 2}[p.Spec.NodeName]
		if i == 0 || !nodeSubnet(i).Contains(ip) {
			t.Errorf("%s on %s has %s, not an address of %s's subnet", p.Metadata.Name, p.Spec.NodeName, ip, p.Spec.NodeName)
		}
		if ip == nodePrimary(i) {
			t.Errorf("%s has its node's primary address %s", p.Metadata.Name, ip)
		}
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
	}
	if len(byNode["node1"]) == 0 || len(byNode["node2"]) == 0 {
		t.Fatalf("pods not spread over both nodes: %v", byNode)
	}
	for _, pair := range [][2]pod{{byNode["node1"][0], byNode["node2"][0]}, {byNode["node2"][0], byNode["node1"][0]}} {
		from, to := pair[0], pair[1]
		out := k(t, "exec", from.Metadata.Name, "--", "/probe", "get", "http://"+to.Status.PodIP+":8080/")
		// The server answers "<hostname> <caller ip:port>": the caller's own pod address, no NAT in the VPC.
		if f := strings.Fields(out); len(f) != 2 || f[0] != to.Metadata.Name || !strings.HasPrefix(f[1], from.Status.PodIP+":") {
			t.Errorf("%s (%s) -> %s (%s): answer %q", from.Metadata.Name, from.Status.PodIP, to.Metadata.Name, to.Status.PodIP, out)
		}
	}
}

func signalNotify(c chan os.Signal) { signal.Notify(c, syscall.SIGTERM, syscall.SIGINT) }

const fillDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: fill, namespace: default}
spec:
  replicas: %d
  selector: {matchLabels: {app: fill}}
  template:
    metadata: {labels: {app: fill}}
    spec:
      nodeSelector: {kubernetes.io/hostname: node1}
      terminationGracePeriodSeconds: 1
      containers:
      - {name: probe, image: ` + probeRef + `, imagePullPolicy: Never}
`

// A node whose pods fill its addresses: more replicas
// than node1 has room for. The node's max-pods (vpcctl max-pods: addresses
// plus the two host-network pods, vpc-cni and kube-proxy) keeps the ones
// beyond Pending, never ContainerCreating on a node without addresses; the
// node stays Ready, untainted, and keeps its pods for -cluster.watch.
func TestFullNodeStaysReadyAndKeepsItsPods(t *testing.T) {
	noTestPodsOn(t, "node1")
	// Every kube-system pod on node1 takes one of its max-pods: the
	// host-network ones, and CoreDNS when the scheduler put it there.
	host, others := 0, 0
	for _, p := range pods(t, "kube-system", "") {
		switch {
		case p.Spec.NodeName != "node1":
		case p.Spec.HostNetwork:
			host++
		default:
			others++
		}
	}
	room := tc.maxPods - host - others
	const extra = 3
	apply(t, fmt.Sprintf(fillDeployment, room+extra))
	t.Cleanup(func() { _, _ = tc.kubectlOut(nil, "delete", "deployment", "fill", "--wait=true") })
	running := runningPods(t, "app=fill", room)
	names := map[string]bool{}
	for _, p := range running {
		names[p.Metadata.Name] = true
	}
	t.Logf("node1: max-pods %d, %d host-network pods, %d other kube-system pods, %d fill pods Running; watching for %s",
		tc.maxPods, host, others, room, *watch)
	deadline := time.Now().Add(*watch)
	for checks := 0; ; checks++ {
		n := getNode(t, "node1")
		if ready, _, msg := n.ready(); !ready {
			t.Fatalf("after %d checks node1 is not Ready: %s", checks, msg)
		}
		if len(n.Spec.Taints) > 0 {
			t.Fatalf("node1 tainted: %+v", n.Spec.Taints)
		}
		var pending, run int
		for _, p := range pods(t, "default", "app=fill") {
			switch {
			case p.Status.Phase == "Running":
				run++
				if !names[p.Metadata.Name] {
					t.Fatalf("%s is new: a fill pod was replaced (evicted?)", p.Metadata.Name)
				}
			case p.Status.Phase == "Pending" && p.Spec.NodeName == "":
				pending++
			default:
				t.Fatalf("%s on %q is %s %+v: beyond the node's room a pod must stay unscheduled",
					p.Metadata.Name, p.Spec.NodeName, p.Status.Phase, p.Status.ContainerStatuses)
			}
		}
		if run != room || pending != extra {
			t.Fatalf("%d Running (want %d), %d Pending (want %d)", run, room, pending, extra)
		}
		if time.Now().After(deadline) {
			t.Logf("node1 Ready and untainted for %s (%d checks), %d pods kept, %d Pending", *watch, checks+1, run, pending)
			return
		}
		time.Sleep(10 * time.Second)
	}
}
