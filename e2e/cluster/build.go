//go:build cluster

package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"vpc-cni/internal/testsupport/gotool"
)

// Versions the cluster runs, all built from the Go module proxy.
const (
	kubeVersion       = "v1.37.2"
	kubeStagingVer    = "v0.37.2" // the published k8s.io/* modules of the same release
	etcdVersion       = "v3.7.3"
	containerdVersion = "v2.4.2"
	helmVersion       = "v3.22.0" // deploy/chart_test.go's
)

// kubeStaging are k8s.io/kubernetes's staging modules (its go.mod replaces
// them with ./staging/src/...): the scratch module maps each to its release.
var kubeStaging = []string{"api", "apiextensions-apiserver", "apimachinery", "apiserver", "cli-runtime",
	"client-go", "cloud-provider", "cluster-bootstrap", "code-generator", "component-base", "component-helpers",
	"controller-manager", "cri-api", "cri-client", "cri-streaming", "csi-translation-lib",
	"dynamic-resource-allocation", "endpointslice", "externaljwt", "kms", "kube-aggregator",
	"kube-controller-manager", "kube-proxy", "kube-scheduler", "kubectl", "kubelet", "metrics", "mount-utils",
	"pod-security-admission", "sample-apiserver", "streaming"}

// tools are the binaries the cluster runs.
type tools struct {
	kube, etcd, containerd string // directories
	helm, vpcctl, loopback string
	policy                 policyTools // CLUSTER_POLICY=1 only
}

func (t tools) k(name string) string { return filepath.Join(t.kube, name) }

// buildTools builds (or finds in ~/.cache/vpc-cni-e2e) every binary.
func buildTools(repo, dir string, log io.Writer, netOnly bool) (tools, error) {
	t, err := buildLocal(repo, dir, log)
	if err != nil || netOnly {
		return t, err
	}
	var cmds []string
	for _, c := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kubectl", "kube-proxy"} {
		cmds = append(cmds, "k8s.io/kubernetes/cmd/"+c)
	}
	kube := kubeModule("kubernetes", cmds, nil, nil)
	etcd := gotool.Module{Name: "etcd", Version: etcdVersion, Require: "go.etcd.io/etcd/server/v3",
		Packages: []string{"go.etcd.io/etcd/server/v3"}, LDFlags: "-s -w"}
	ctrd := gotool.Module{Name: "containerd", Version: containerdVersion, Require: "github.com/containerd/containerd/v2",
		LDFlags: "-s -w"}
	for _, c := range []string{"containerd", "containerd-shim-runc-v2", "ctr"} {
		ctrd.Packages = append(ctrd.Packages, "github.com/containerd/containerd/v2/cmd/"+c)
	}
	if t.kube, err = gotool.BuildModule(kube, log); err != nil {
		return t, err
	}
	if t.etcd, err = gotool.BuildModule(etcd, log); err != nil {
		return t, err
	}
	if t.containerd, err = gotool.BuildModule(ctrd, log); err != nil {
		return t, err
	}
	if t.helm, err = gotool.Install("helm.sh/helm/v3/cmd/helm", helmVersion, "helm"); err != nil || !policyOn() {
		return t, err
	}
	t.policy, err = buildPolicyTools(log)
	return t, err
}

// nodePlugins are the reference plugins a node image carries in
// /opt/cni/bin (EKS's AMI does): containerd's loopback, and portmap and
// bandwidth, which vpc-cni's install chains when it finds them (host ports).
var nodePlugins = []string{"main/loopback", "meta/portmap", "meta/bandwidth"}

// buildLocal builds vpcctl as the Makefile does, and the node's reference
// plugins at go.mod's version.
func buildLocal(repo, dir string, log io.Writer) (tools, error) {
	var t tools
	bin := filepath.Join(dir, "bin")
	if err := run(log, repo, "make", "build", "BIN="+bin, "VERSION=cluster", "COMMIT=cluster"); err != nil {
		return t, err
	}
	t.vpcctl = filepath.Join(bin, "vpcctl")
	for _, p := range nodePlugins {
		if err := run(log, repo, gotool.Go(), "build", "-o", bin+"/", "github.com/containernetworking/plugins/plugins/"+p); err != nil {
			return t, err
		}
	}
	t.loopback = filepath.Join(bin, "loopback")
	return t, nil
}

func run(log io.Writer, dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return nil
}

// kubeModule builds packages of k8s.io/kubernetes at kubeVersion, its
// staging modules mapped to their published releases, with the release's
// version stamped in; more are packages built as well, tests as test
// binaries.
func kubeModule(name string, cmds, more, tests []string) gotool.Module {
	replace := map[string]string{}
	for _, m := range kubeStaging {
		replace["k8s.io/"+m] = kubeStagingVer
	}
	ver := "k8s.io/component-base/version"
	minor := strings.Split(kubeVersion, ".")[1]
	return gotool.Module{Name: name, Version: kubeVersion, Require: "k8s.io/kubernetes", Replace: replace,
		Packages: append(cmds, more...), Tests: tests,
		LDFlags: fmt.Sprintf("-s -w -X %s.gitVersion=%s -X %s.gitMajor=1 -X %s.gitMinor=%s -X %s.gitTreeState=clean",
			ver, kubeVersion, ver, ver, minor, ver)}
}
