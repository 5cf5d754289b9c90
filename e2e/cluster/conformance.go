//go:build cluster

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"vpc-cni/internal/ociimage"
	"vpc-cni/internal/testsupport/gotool"
)

// The upstream networking checks that need no cloud provider, run by Kubernetes' own e2e.test against a running cluster.
const conformanceFocus = `\[sig-network\] Networking Granular Checks: Pods should function for (intra-pod|node-pod) communication: (http|udp)` +
	`|\[sig-network\] Services should serve a basic endpoint from pods` +
	`|\[sig-network\] Networking Granular Checks: Services should function for pod-Service: http`

// With CLUSTER_POLICY=1 (CoreDNS runs), upstream's NetworkPolicy specs
// (all are [Feature:NetworkPolicy]) and every sig-network conformance spec,
// DNS included; this kernel has no SCTP.
const (
	netpolFocus = `\[sig-network\] Netpol|\[sig-network\] .*\[Conformance\]`
	netpolSkip  = `SCTPConnectivity|\[Disruptive\]|\[Serial\]`
)

// agnhostRef is the image the release's e2e.test asks for
// (test/utils/image/manifest.go), built here from the same release.
const agnhostRef = "registry.k8s.io/e2e-test-images/agnhost:2.66.1"

// conformance builds e2e.test and agnhost (cached), imports agnhost into
// each node of the cluster running in dir, and runs the checks.
func conformance(dir string) error {
	kubeconfig := filepath.Join(dir, "admin.kubeconfig")
	t0 := time.Now()
	bin, err := gotool.BuildModule(kubeModule("kubernetes-e2e", nil, []string{"k8s.io/kubernetes/test/images/agnhost"},
		[]string{"k8s.io/kubernetes/test/e2e"}), os.Stderr)
	if err != nil {
		return err
	}
	fmt.Printf("%s e2e.test and agnhost built in %s\n", time.Now().Format("15:04:05"), time.Since(t0).Round(time.Second))
	if _, err := os.Stat(filepath.Join(dir, "ready")); err != nil { // checked after the build: it can run ahead
		return fmt.Errorf("no cluster is up in %s: run make cluster first", dir)
	}
	if err := importTestImages(dir, bin); err != nil {
		return err
	}
	focus, skip := conformanceFocus, `\[Feature:|\[Disruptive\]|\[Serial\]`
	if policyOn() {
		focus, skip = netpolFocus, netpolSkip
	}
	if f := os.Getenv("CONFORMANCE_FOCUS"); f != "" {
		focus = f
	}
	reports := filepath.Join(dir, "conformance")
	cmd := exec.Command(filepath.Join(bin, "e2e.test"), "--kubeconfig", kubeconfig, "--provider", "skeleton",
		"--ginkgo.focus", focus, "--ginkgo.skip", skip,
		"--ginkgo.v", "--report-dir", reports, "--prepull-images=false")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	runErr := cmd.Run()
	fmt.Println("\nSpecs by outcome (focus " + focus + ", skip " + skip + "):")
	if err := reportOutcomes(os.Stdout, reports, focus); err != nil {
		fmt.Println("no outcomes:", err)
	}
	return runErr
}

// glibcDNSRef is the image the DNS specs run their glibc resolver queries
// in; the same files as agnhost's serve (its specs run only sh -c, dig,
// getent, seq and test in it).
const glibcDNSRef = "registry.k8s.io/e2e-test-images/glibc-dns-testing:2.1.1"

// importTestImages imports agnhost's image, and the DNS specs' image with
// the same files, into each node.
func importTestImages(dir, bin string) error {
	for _, ref := range []string{agnhostRef, glibcDNSRef} {
		img, err := agnhostImage(bin, ref)
		if err != nil {
			return err
		}
		tarPath := filepath.Join(dir, "images", filepath.Base(strings.Split(ref, ":")[0])+".tar")
		if err := os.WriteFile(tarPath, img, 0o644); err != nil {
			return err
		}
		if err := importIntoNodes(dir, tarPath); err != nil {
			return err
		}
	}
	return importPause(dir)
}

// e2ePauseRef is the pause image specs run as a workload (Service endpoints
// latency); the tier's own pause program serves.
const e2ePauseRef = "registry.k8s.io/pause:3.10.2"

func importPause(dir string) error {
	pause, err := os.ReadFile(filepath.Join(dir, "images", "src", "pause", "pause"))
	if err != nil {
		return err
	}
	img, err := ociimage.Image{Ref: e2ePauseRef, Files: map[string]ociimage.File{"pause": exe(pause)},
		Entrypoint: []string{"/pause"}}.Archive()
	if err != nil {
		return err
	}
	tarPath := filepath.Join(dir, "images", "e2e-pause.tar")
	if err := os.WriteFile(tarPath, img, 0o644); err != nil {
		return err
	}
	return importIntoNodes(dir, tarPath)
}

// agnhostImage is agnhost (built in bin) as the release's image ref, with
// the programs the e2e framework execs in it.
func agnhostImage(bin, ref string) ([]byte, error) {
	agnhost, err := os.ReadFile(filepath.Join(bin, "agnhost"))
	if err != nil {
		return nil, err
	}
	files := map[string]ociimage.File{"agnhost": exe(agnhost)}
	// The e2e framework execs /bin/sh (and nc, wget ...) in agnhost pods, as the
	// release's image has them: a static busybox (Debian's busybox-static).
	busybox, err := readCommand("busybox")
	if err != nil {
		return nil, fmt.Errorf("agnhost's shell: %w (apt-get install busybox-static)", err)
	}
	for _, applet := range []string{"wget", "cat", "echo", "sleep", "ls", "hostname", "ip", "test", "timeout", "grep", "seq", "nslookup"} {
		files["bin/"+applet] = exe(busybox)
	}
	// ... and OpenBSD's nc (`nc -v -t -w 2`, which busybox's lacks) and curl
	// (node-to-pod checks), Debian's, with the libraries they load; dig and
	// glibc's getent for the DNS specs. The shell is Debian's dash: busybox's
	// sh runs its own nc applet before any in PATH.
	for name, cmd := range map[string]string{"bin/sh": "dash", "bin/nc": "nc.openbsd", "bin/curl": "curl", "bin/dig": "dig",
		"bin/getent": "getent"} {
		path, err := exec.LookPath(cmd)
		if err == nil {
			err = addDynamic(files, name, path)
		}
		if err != nil {
			return nil, fmt.Errorf("agnhost's %s: %w (apt-get install netcat-openbsd curl bind9-dnsutils)", name, err)
		}
	}
	if err := addPorterCerts(files); err != nil {
		return nil, err
	}
	// As upstream's image: with no arguments agnhost pauses (the host-exec
	// pods of the HostPort spec give none and are exec'd into).
	return ociimage.Image{Ref: ref, Files: files, Entrypoint: []string{"/agnhost"}, Cmd: []string{"pause"},
		Env: []string{"PATH=/bin:/"}}.Archive()
}

// readCommand is the program PATH finds as name (scripts/prereqs.sh checks
// for the same names).
func readCommand(name string) ([]byte, error) {
	path, err := exec.LookPath(name)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}

// importIntoNodes imports an image archive into the containerd of every
// node listed in dir/holders.
func importIntoNodes(dir, tarPath string) error {
	f, err := os.Open(filepath.Join(dir, "holders"))
	if err != nil {
		return err
	}
	defer f.Close()
	ctr := filepath.Join(gotool.CacheDir(), "containerd-"+containerdVersion, "ctr")
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) != 2 || !strings.HasPrefix(fields[1], "node") {
			continue
		}
		out, err := exec.Command("nsenter", "--target", fields[0], "--net", "--mount", "--", ctr,
			"--address", "/run/containerd/containerd.sock", "-n", "k8s.io", "images", "import", tarPath).CombinedOutput()
		if err != nil {
			return fmt.Errorf("importing %s into %s: %v: %s", tarPath, fields[1], err, out)
		}
	}
	return s.Err()
}

// addDynamic puts the program at path into files as name, with the shared
// libraries and loader ldd says it loads, at their paths.
func addDynamic(files map[string]ociimage.File, name, path string) error {
	prog, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	files[name] = exe(prog)
	out, err := exec.Command("ldd", path).Output()
	if err != nil {
		return fmt.Errorf("ldd %s: %w", path, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		lib := libraryOf(line)
		if lib == "" {
			continue
		}
		data, err := os.ReadFile(lib) // a symlink's target's bytes, at the link's path
		if err != nil {
			return err
		}
		files[strings.TrimPrefix(lib, "/")] = exe(data)
	}
	return nil
}

// libraryOf is the absolute path in one line of ldd's output, if any:
// "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or the loader's
// "/lib64/ld-linux-x86-64.so.2 (0x...)".
func libraryOf(line string) string {
	if _, after, ok := strings.Cut(line, "=> "); ok {
		line = after
	}
	fields := strings.Fields(line)
	if len(fields) == 0 || !strings.HasPrefix(fields[0], "/") {
		return ""
	}
	return fields[0]
}

// addPorterCerts puts the certificate and key agnhost's porter serves TLS
// with at the image's root, as the release's Dockerfile adds them.
func addPorterCerts(files map[string]ociimage.File) error {
	src, err := moduleSource("k8s.io/kubernetes", kubeVersion)
	if err != nil {
		return err
	}
	for _, name := range []string{"localhost.crt", "localhost.key"} {
		b, err := os.ReadFile(filepath.Join(src, "test/images/agnhost/porter", name))
		if err != nil {
			return err
		}
		files[name] = ociimage.File{Data: b, Mode: 0o644}
	}
	return nil
}
