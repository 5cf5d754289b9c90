package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// flood sizes from a pod: connections that never send a byte, and ones
// that send part of their headers and stop (slowloris).
const (
	idleFlooders      = 300
	slowlorisFlooders = 50
)

// A pod that holds 300 idle and 50 half-sent connections to the loop's
// metrics port does not starve the kubelet's probe: the DaemonSet's loop
// runs as deploy/kubernetes ships it (its command, $(HOST_IP) the node's
// primary address), and /healthz, probed as its readiness probe says (host,
// port, path, and its timeoutSeconds as the client's timeout, on a new
// connection from the node each time, as the kubelet does), answers 200
// every time while the flood holds.
func TestPrivilegedAPodCannotStarveTheProbe(t *testing.T) {
	w := newWorld(t, worldOpts{})
	ds := shippedLoop(t, w.nodeIP.String())
	lp := startShippedLoop(t, w, ds)
	p := w.newPod("flooder")
	w.add(p, mustJSON(t, w.conf(nil)))

	f := floodFromPod(t, p, []string{ds.metricsAddr, net.JoinHostPort(w.nodeIP.String(), ds.probePort())})
	waitUntil(t, "the pod's connections established", func() bool {
		return f.open.Load() >= idleFlooders+slowlorisFlooders
	})
	failed := 0
	for i := range 5 {
		if err := w.probe(ds); err != nil {
			failed++
			t.Errorf("probe %d of 5 with %d connections held from the pod: %v", i+1, f.open.Load(), err)
		}
	}
	if failed > 0 {
		t.Logf("the loop's log:\n%s", lp.String())
	}
}

// shipped is the reconcile container of deploy/kubernetes/daemonset.yaml.
type shipped struct {
	args        []string // vpcctl's, with $(HOST_IP) expanded
	metricsAddr string   // --metrics-listen's
	probe       *corev1.HTTPGetAction
	timeout     time.Duration // the readiness probe's timeoutSeconds
	ports       map[string]int32
	hostIP      string
}

func shippedLoop(t *testing.T, hostIP string) shipped {
	t.Helper()
	data, err := os.ReadFile("../deploy/kubernetes/daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ds appsv1.DaemonSet
	if err := yaml.Unmarshal(data, &ds); err != nil {
		t.Fatal(err)
	}
	c := ds.Spec.Template.Spec.Containers[0]
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil {
		t.Fatalf("the shipped DaemonSet has no httpGet readiness probe: %+v", c.ReadinessProbe)
	}
	s := shipped{probe: c.ReadinessProbe.HTTPGet, timeout: time.Duration(c.ReadinessProbe.TimeoutSeconds) * time.Second,
		ports: map[string]int32{}, hostIP: hostIP}
	for _, a := range c.Command[1:] {
		s.args = append(s.args, strings.ReplaceAll(a, "$(HOST_IP)", hostIP))
	}
	for i, a := range s.args {
		if a == "--metrics-listen" && i+1 < len(s.args) {
			host, port, _ := net.SplitHostPort(s.args[i+1]) // "[$(HOST_IP)]:61678" for either family
			s.metricsAddr = net.JoinHostPort(host, port)
		}
	}
	for _, p := range c.Ports {
		s.ports[p.Name] = p.ContainerPort
	}
	if s.metricsAddr == "" || s.timeout == 0 {
		t.Fatalf("the shipped loop serves no metrics port or its probe has no timeout: %v", c.Command)
	}
	return s
}

// probeAddr is host:port as the kubelet resolves them: no host is the
// pod's address, which is the node's on a hostNetwork pod.
func (s shipped) probeAddr() string {
	host := s.probe.Host
	if host == "" {
		host = s.hostIP
	}
	return net.JoinHostPort(host, s.probePort())
}

func (s shipped) probePort() string {
	if s.probe.Port.StrVal != "" {
		return strconv.Itoa(int(s.ports[s.probe.Port.StrVal]))
	}
	return s.probe.Port.String()
}

// startShippedLoop starts the shipped loop in the node and returns once it
// serves both the metrics port and the probe's address.
func startShippedLoop(t *testing.T, w *world, s shipped) *tailWriter {
	t.Helper()
	cmd := exec.Command(bin("vpcctl"), append([]string{"--state-dir", w.stateDir}, s.args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	w.inNode(func() error { return cmd.Start() })
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	log := &tailWriter{}
	want := map[string]bool{"http://" + s.metricsAddr: true, "http://" + s.probeAddr(): true}
	sc := bufio.NewScanner(stderr)
	for len(want) > 0 && sc.Scan() {
		fmt.Fprintln(log, sc.Text())
		for a := range want {
			if strings.HasPrefix(sc.Text(), "vpcctl: serving ") && strings.HasSuffix(sc.Text(), " on "+a) {
				delete(want, a)
			}
		}
	}
	if len(want) > 0 {
		t.Fatalf("the loop ended before serving %v:\n%s", want, log.String())
	}
	go func() { _, _ = io.Copy(log, stderr) }()
	return log
}

// probe is one kubelet httpGet probe from the node: a new connection, the
// probe's timeout as the client's, success on 2xx or 3xx.
func (w *world) probe(s shipped) error {
	tr := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := w.node.Do(func(ns.NetNS) (err error) {
			c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}}
	client := &http.Client{Transport: tr, Timeout: s.timeout}
	req, err := http.NewRequest(http.MethodGet, "http://"+s.probeAddr()+s.probe.Path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "kube-probe/1.31")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("%s: %q", resp.Status, body)
	}
	return nil
}

// podFlood is a pod's connections to addrs: each flooder dials from the
// pod's netns, sends nothing (idle) or half a request (slowloris), and
// dials again once the server closes it, until the test ends.
type podFlood struct {
	open atomic.Int64 // connections established at least once
	stop context.CancelFunc
	wg   sync.WaitGroup
}

func floodFromPod(t *testing.T, p *pod, addrs []string) *podFlood {
	ctx, cancel := context.WithCancel(context.Background())
	f := &podFlood{stop: cancel}
	for i := range idleFlooders + slowlorisFlooders {
		slow := i >= idleFlooders
		for j, addr := range addrs {
			f.wg.Add(1)
			go f.hold(ctx, p, addr, slow, j == 0)
		}
	}
	t.Cleanup(func() { cancel(); f.wg.Wait() })
	return f
}

// hold keeps one connection to addr open; counted says whether its first
// success counts in open (the metrics port's; others may be refused).
func (f *podFlood) hold(ctx context.Context, p *pod, addr string, slow, counted bool) {
	defer f.wg.Done()
	first := true
	for ctx.Err() == nil {
		var c net.Conn
		err := p.ns.Do(func(ns.NetNS) (err error) {
			c, err = (&net.Dialer{}).DialContext(ctx, "tcp", addr)
			return err
		})
		if err != nil {
			return // refused (nothing listens there for a pod) or the test ended
		}
		if first && counted {
			f.open.Add(1)
		}
		first = false
		if slow {
			_, _ = io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: flood\r\nX-Slow: ")
		}
		stop := context.AfterFunc(ctx, func() { _ = c.Close() })
		_, _ = io.Copy(io.Discard, c) // until the server closes it
		stop()
		_ = c.Close()
	}
}
