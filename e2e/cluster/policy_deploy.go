//go:build cluster

package main

import (
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"

	"vpc-cni/internal/ociimage"
)

const (
	agentRef      = "localhost/vpc-cni-cluster/aws-network-policy-agent:" + npaVersion
	controllerRef = "localhost/vpc-cni-cluster/network-policy-controller:" + npcVersion
	corednsRef    = "localhost/vpc-cni-cluster/coredns:" + corednsVersion
	dnsIP         = "100.120.0.10" // kubeadm's: the service range's tenth address
)

// policyImages package the agent as its Dockerfile does (binary /controller,
// its CLIs and objects beside it in /, the working directory), the controller and CoreDNS.
// The agent finds its node's IMDS through simEnv.
func (c *cluster) policyImages(simEnv []string) ([]ociimage.Image, error) {
	p := c.tools.policy
	read := map[string]string{"agent": filepath.Join(p.agent, "aws-network-policy-agent"),
		"aws-eks-na-cli": filepath.Join(p.agent, "cli"), "aws-eks-na-cli-v6": filepath.Join(p.agent, "cliv6"),
		"controller": filepath.Join(p.controller, "cmd"), "coredns": filepath.Join(p.coredns, "coredns")}
	bin := map[string][]byte{}
	for k, path := range read {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		bin[k] = b
	}
	// The agent copies its CLIs and objects to the node's /opt/cni/bin, as from its own image.
	agent := map[string]ociimage.File{"controller": exe(bin["agent"]), "aws-eks-na-cli": exe(bin["aws-eks-na-cli"]),
		"aws-eks-na-cli-v6": exe(bin["aws-eks-na-cli-v6"])}
	for _, o := range bpfObjects {
		b, err := os.ReadFile(filepath.Join(p.bpf, o+".bpf.o"))
		if err != nil {
			return nil, err
		}
		agent[o+".bpf.o"] = ociimage.File{Data: b, Mode: 0o644}
	}
	arch := goruntime.GOARCH
	return []ociimage.Image{
		{Ref: agentRef, Arch: arch, Files: agent, Entrypoint: []string{"/controller"}, Env: simEnv},
		{Ref: controllerRef, Arch: arch, Files: map[string]ociimage.File{"controller": exe(bin["controller"])},
			Entrypoint: []string{"/controller"}},
		{Ref: corednsRef, Arch: arch, Files: map[string]ociimage.File{"coredns": exe(bin["coredns"])},
			Entrypoint: []string{"/coredns"}},
	}, nil
}

// policyMounts gives the node a bpffs of its own: the nodes share the
// machine's /sys, and two agents would collide on the same pins.
func policyMounts() string {
	if !policyOn() {
		return ""
	}
	return "mount -t bpf bpffs /sys/fs/bpf\n"
}

// policyKubelet points pods at CoreDNS.
func policyKubelet() string {
	if !policyOn() {
		return ""
	}
	return "clusterDNS: [" + dnsIP + "]\nclusterDomain: cluster.local\n"
}

// policyMode is the agent's enforcing mode: CLUSTER_POLICY_MODE, standard by default.
func policyMode() string {
	if m := os.Getenv("CLUSTER_POLICY_MODE"); m != "" {
		return m
	}
	return "standard"
}

// policyChartValues turns the chart's agent on with the local image.
func policyChartValues() []string {
	if !policyOn() {
		return nil
	}
	return []string{"--set", "networkPolicy.enabled=true", "--set", "networkPolicy.enforcingMode=" + policyMode(),
		"--set", "networkPolicy.image.repository=" + strings.Split(agentRef, ":")[0],
		"--set", "networkPolicy.image.tag=" + npaVersion, "--set", "networkPolicy.image.pullPolicy=Never",
		"--set", "networkPolicy.controllerConfigMap.create=true"}
}

// installPolicyCRDs applies the controller's CRDs before the agent starts:
// its manager needs PolicyEndpoint and ClusterPolicyEndpoint to exist.
func (c *cluster) installPolicyCRDs() error {
	if !policyOn() {
		return nil
	}
	files, err := filepath.Glob(filepath.Join(c.tools.policy.npcSource, "config/crd/bases/*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("the controller's CRDs: none under %s (%v)", c.tools.policy.npcSource, err)
	}
	var all []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		all = append(append(all, "\n---\n"...), b...)
	}
	_, err = c.kubectlOut(all, "apply", "--server-side", "-f", "-")
	return err
}

// installPolicyControllerAndDNS deploys the controller with its module's
// ClusterRole and CoreDNS with the kube-dns Service the kubelets point at.
func (c *cluster) installPolicyControllerAndDNS() error {
	if !policyOn() {
		return nil
	}
	role, err := os.ReadFile(filepath.Join(c.tools.policy.npcSource, "config/rbac/role.yaml"))
	if err != nil {
		return err
	}
	rbac := strings.ReplaceAll(string(role), "namespace: system", "namespace: kube-system")
	manifest := rbac + "\n---\n" + controllerManifest + "\n---\n" + corednsManifest
	if err := os.WriteFile(filepath.Join(c.dir, "policy.yaml"), []byte(manifest), 0o644); err != nil {
		return err
	}
	_, err = c.kubectlOut([]byte(manifest), "apply", "-f", "-")
	return err
}

// waitPolicyReady waits for the agents, the controller and CoreDNS.
func (c *cluster) waitPolicyReady() error {
	if !policyOn() {
		return nil
	}
	for _, r := range []string{"daemonset/vpc-cni", "deployment/network-policy-controller", "deployment/coredns"} {
		if _, err := c.kubectlOut(nil, "-n", "kube-system", "rollout", "status", r, "--timeout=5m"); err != nil {
			return fmt.Errorf("%w\n%s", err, c.whyNotReady())
		}
	}
	c.step("network policy agent, controller and CoreDNS ready")
	return nil
}
