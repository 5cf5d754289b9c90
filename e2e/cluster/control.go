//go:build cluster

package main

import (
	"net"
	"path/filepath"
	"time"
)

const serviceCIDR = "100.120.0.0/16" // ClusterIPs: outside the VPC, DNATed on the nodes

// startControlPlane runs etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler in the control plane's namespace, each after the one
// before answers.
func (c *cluster) startControlPlane() error {
	p, pid := c.pki, c.ctl.pid
	etcd, err := c.procs.start("etcd", pid, false, nil, filepath.Join(c.tools.etcd, "server"),
		"--name", "ctl", "--data-dir", filepath.Join(c.dir, "etcd"), "--unsafe-no-fsync",
		"--listen-client-urls", "http://127.0.0.1:2379", "--advertise-client-urls", "http://127.0.0.1:2379",
		"--listen-peer-urls", "http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
		"--initial-cluster", "ctl=http://127.0.0.1:2380", "--log-level", "warn")
	if err != nil {
		return err
	}
	if err := waitFor("etcd", etcd, time.Minute, c.etcdUp); err != nil {
		return err
	}
	api, err := c.procs.start("kube-apiserver", pid, false, nil, c.tools.k("kube-apiserver"),
		"--etcd-servers", "http://127.0.0.1:2379", "--advertise-address", ctlIP.String(),
		"--bind-address", "0.0.0.0", "--secure-port", "6443",
		"--client-ca-file", p.path("ca.crt"), "--tls-cert-file", p.path("apiserver.crt"), "--tls-private-key-file", p.path("apiserver.key"),
		"--kubelet-client-certificate", p.path("apiserver-kubelet.crt"), "--kubelet-client-key", p.path("apiserver-kubelet.key"),
		"--kubelet-preferred-address-types", "InternalIP",
		"--service-account-key-file", p.path("sa.pub"), "--service-account-signing-key-file", p.path("sa.key"),
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range", serviceCIDR, "--authorization-mode", "Node,RBAC",
		"--enable-admission-plugins", "NodeRestriction", "--allow-privileged=true")
	if err != nil {
		return err
	}
	if err := waitFor("kube-apiserver /readyz", api, 3*time.Minute, func() bool {
		return c.kubectl("get", "--raw", "/readyz") == nil
	}); err != nil {
		return err
	}
	for _, name := range []string{"kube-controller-manager", "kube-scheduler"} {
		kc := filepath.Join(c.dir, name+".kubeconfig")
		if err := p.kubeconfig(kc, name, "https://"+ctlIP.String()+":6443"); err != nil {
			return err
		}
		args := []string{"--kubeconfig", kc, "--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
			"--leader-elect=false", "--bind-address", "127.0.0.1"}
		if name == "kube-controller-manager" {
			args = append(args, "--use-service-account-credentials", "--service-account-private-key-file", p.path("sa.key"),
				"--root-ca-file", p.path("ca.crt"), "--cluster-signing-cert-file", p.path("ca.crt"),
				"--cluster-signing-key-file", p.path("ca.key"), "--service-cluster-ip-range", serviceCIDR)
		}
		if _, err := c.procs.start(name, pid, false, nil, append([]string{c.tools.k(name)}, args...)...); err != nil {
			return err
		}
	}
	return nil
}

// etcdUp: etcd takes connections (dialled from inside its namespace).
func (c *cluster) etcdUp() bool {
	return inNS(c.ctl.netns(), func() error {
		conn, err := net.DialTimeout("tcp", "127.0.0.1:2379", time.Second)
		if err == nil {
			conn.Close()
		}
		return err
	}) == nil
}
