//go:build cluster

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"

	"vpc-cni/internal/testsupport/gotool"
)

// NetworkPolicy as EKS runs it: the reference's node agent (in the chart's
// DaemonSet), its controller and CoreDNS, all built from the Go module proxy
// (the agent's eBPF objects with Debian's clang). CLUSTER_POLICY=1 turns it on.
const (
	npaModule      = "github.com/aws/aws-network-policy-agent"
	npaVersion     = "v1.4.3" // v1.5.0's dependencies are not on the proxy
	npcModule      = "github.com/aws/amazon-network-policy-controller-k8s"
	npcVersion     = "v1.1.10"
	corednsVersion = "v1.15.0"
)

// bpfObjects are the agent's eBPF programs, opened by bare name from its working directory.
var bpfObjects = []string{"tc.v4ingress", "tc.v4egress", "tc.v6ingress", "tc.v6egress", "v4events", "v6events"}

func policyOn() bool { return os.Getenv("CLUSTER_POLICY") == "1" }

// policyTools are the cache directories of what policy runs.
type policyTools struct {
	agent, bpf, controller, coredns string
	npcSource                       string // the controller's module: CRDs and RBAC
}

func buildPolicyTools(log io.Writer) (policyTools, error) {
	var p policyTools
	var err error
	mods := []struct {
		dir *string
		m   gotool.Module
	}{
		{&p.agent, gotool.Module{Name: "network-policy-agent", Version: npaVersion, Require: npaModule,
			Packages: []string{npaModule, npaModule + "/cmd/cli", npaModule + "/cmd/cliv6"}, LDFlags: "-s -w"}},
		{&p.controller, gotool.Module{Name: "network-policy-controller", Version: npcVersion, Require: npcModule,
			Packages: []string{npcModule + "/cmd"}, LDFlags: "-s -w"}},
		{&p.coredns, gotool.Module{Name: "coredns", Version: corednsVersion, Require: "github.com/coredns/coredns",
			Packages: []string{"github.com/coredns/coredns"}, LDFlags: "-s -w"}},
	}
	for _, b := range mods {
		if *b.dir, err = gotool.BuildModule(b.m, log); err != nil {
			return p, err
		}
	}
	if p.npcSource, err = moduleSource(npcModule, npcVersion); err != nil {
		return p, err
	}
	p.bpf, err = buildBPF(log)
	return p, err
}

// moduleSource is the module cache's copy of mod@version.
func moduleSource(mod, version string) (string, error) {
	cmd := exec.Command(gotool.Go(), "mod", "download", "-json", mod+"@"+version)
	cmd.Dir = os.TempDir() // outside any module
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %v", mod, version, err)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %v %s", mod, version, err, info.Error)
	}
	return info.Dir, nil
}

// buildBPF compiles the agent's eBPF objects as its Makefile does (build-bpf),
// against this kernel's BTF, into the cache (a temp dir renamed into place).
func buildBPF(log io.Writer) (string, error) {
	final := filepath.Join(gotool.CacheDir(), "network-policy-agent-bpf-"+npaVersion)
	if _, err := os.Stat(filepath.Join(final, "v6events.bpf.o")); err == nil {
		return final, nil
	}
	for _, tool := range []string{"clang", "bpftool"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("the agent's eBPF objects need %s (apt-get install clang llvm libbpf-dev bpftool)", tool)
		}
	}
	src, err := moduleSource(npaModule, npaVersion)
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(gotool.CacheDir(), "network-policy-agent-bpf-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := compileBPF(log, filepath.Join(src, "pkg/ebpf/c"), tmp); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", fmt.Errorf("caching the eBPF objects: %v", err)
	}
	return final, nil
}

// compileBPF builds src's objects into out; vmlinux.h (not in the module)
// is this kernel's BTF as C, as the agent's `make vmlinuxh` writes it.
func compileBPF(log io.Writer, src, out string) error {
	inc := filepath.Join(out, "include")
	if err := os.MkdirAll(inc, 0o755); err != nil {
		return err
	}
	vmlinux, err := exec.Command("bpftool", "btf", "dump", "file", "/sys/kernel/btf/vmlinux", "format", "c").Output()
	if err != nil {
		return fmt.Errorf("bpftool btf dump: %v", err)
	}
	if err := os.WriteFile(filepath.Join(inc, "vmlinux.h"), vmlinux, 0o644); err != nil {
		return err
	}
	arch := goruntime.GOARCH // the Makefile's $(ARCH) for the tc objects
	for _, o := range bpfObjects {
		target := arch
		if o == "v4events" || o == "v6events" {
			target = "x86" // as upstream's Makefile builds them
		}
		args := []string{"-I" + inc, "-I" + src, "-g", "-O2", "-Wall", "-fpie", "-target", "bpf", "-DCORE",
			"-D__BPF_TRACING__", "-march=bpf", "-D__TARGET_ARCH_" + target,
			"-c", filepath.Join(src, o+".bpf.c"), "-o", filepath.Join(out, o+".bpf.o")}
		if err := run(log, out, "clang", args...); err != nil {
			return err
		}
	}
	return os.RemoveAll(inc)
}
