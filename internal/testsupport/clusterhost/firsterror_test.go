package clusterhost

import (
	"os"
	"testing"
)

func TestFirstErrorFindsTheFirstLineAtErrorSeverity(t *testing.T) {
	for _, c := range []struct{ name, log, want string }{
		{"containerd", `time="2026-12-06T10:00:00Z" level=info msg="starting containerd"
time="2026-12-06T10:00:01Z" level=warning msg="failed to load plugin" id=io.containerd.snapshotter.v1.zfs
time="2026-12-06T10:00:05Z" level=error msg="RunPodSandbox failed" error="OCI runtime create failed: exec: \"runc\""
time="2026-12-06T10:00:06Z" level=error msg="second"
`, `time="2026-12-06T10:00:05Z" level=error msg="RunPodSandbox failed" error="OCI runtime create failed: exec: \"runc\""`},
		{"kubelet", `I1206 10:00:00.000000    1234 server.go:1] "Started kubelet"
W1206 10:00:01.000000    1234 watcher.go:93] "Error while processing event"
E1206 10:00:02.000000    1234 pod_workers.go:1301] "Error syncing pod" err="failed to create pod sandbox"
`, `E1206 10:00:02.000000    1234 pod_workers.go:1301] "Error syncing pod" err="failed to create pod sandbox"`},
		{"a Go program's exit", "starting\nError: failed to run Kubelet: invalid configuration\n",
			"Error: failed to run Kubelet: invalid configuration"},
		{"nothing at error severity", "I1206 10:00:00.000000 1 a.go:1] \"no error here\"\nlevel=info msg=errors\n", ""},
		{"shortened", "level=error msg=\"" + string(make([]byte, 50)) + "\"", `level=error msg="` + string(make([]byte, 13)) + "..."},
	} {
		max := 1000
		if c.name == "shortened" {
			max = 30
		}
		if got := FirstError(c.log, max); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// A healthy node's logs (a cluster that passed) give no first error; the
// line that says why a node failed is found after the same noise.
func TestFirstErrorLooksPastWhatAHealthyNodeLogs(t *testing.T) {
	const (
		runc    = `time="2026-12-07T00:02:35.5Z" level=error msg="RunPodSandbox for &PodSandboxMetadata{Name:vpc-cni-h5wdl,} failed, error" error="failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: openat2 /sys/fs/cgroup/cpuset/vpc-cni-cluster-node1/kubepods/besteffort/pod0c3f/cpuset.cpus: no such file or directory"`
		kubelet = `E1207 00:02:36.000000 31506 pod_workers.go:1301] "Error syncing pod, skipping" err="failed to \"CreatePodSandbox\" for \"vpc-cni-h5wdl_kube-system\""`
	)
	for _, c := range []struct{ file, failure string }{
		{"testdata/healthy-kubelet.log", kubelet}, {"testdata/healthy-containerd.log", runc},
	} {
		b, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		if got := FirstError(string(b), 1000); got != "" {
			t.Errorf("%s: a healthy node's log gave %q", c.file, got)
		}
		if got := FirstError(string(b)+c.failure+"\n"+string(b), 1000); got != c.failure {
			t.Errorf("%s: %q, want the failure %q", c.file, got, c.failure)
		}
	}
}
