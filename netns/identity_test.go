package netns

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"vpc-cni/internal/testsupport/testenv"
)

// A pod's namespace passes; the process's own namespace, under any of its
// names, and anything that is not a network namespace are refused with the
// reason, and a missing path reads as missing.
func TestPrivilegedCheckPodNetnsRefusesTheNodeAndWhatIsNotANetworkNamespace(t *testing.T) {
	pod := testenv.NewNetNS(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link-to-pod")
	if err := os.Symlink(pod.Path(), link); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path string
		want       error // nil: accepted
		msg        string
	}{
		{"a pod's namespace", pod.Path(), nil, ""},
		{"a symlink to a pod's namespace", link, nil, ""},
		{"the process's own, by /proc/self", "/proc/self/ns/net", ErrNodeNetns, "own network namespace"},
		{"the process's own, by its pid", "/proc/" + strconv.Itoa(os.Getpid()) + "/ns/net", ErrNodeNetns, "own network namespace"},
		{"a regular file", file, ErrNotNetns, "a regular file"},
		{"a directory", dir, ErrNotNetns, "a directory"},
		{"a mount namespace", "/proc/self/ns/mnt", ErrNotNetns, "a mount namespace"},
		{"a device", "/dev/null", ErrNotNetns, "a device"},
		{"missing", filepath.Join(dir, "absent"), fs.ErrNotExist, "no such file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckPodNetns(tc.path)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), tc.path) {
				t.Fatalf("error %v, want %v mentioning %q and the path", err, tc.want, tc.msg)
			}
		})
	}
}

// The process's namespace is what counts, not the calling thread's: from a
// thread inside a pod's namespace, that pod's path still passes and the
// node's is still refused.
func TestPrivilegedCheckPodNetnsComparesWithTheProcessNotTheThread(t *testing.T) {
	pod := testenv.NewNetNS(t)
	inNS(t, pod, func() error {
		if err := CheckPodNetns(pod.Path()); err != nil {
			t.Errorf("the pod's own path, from a thread inside it: %v", err)
		}
		if err := CheckPodNetns("/proc/thread-self/ns/net"); err != nil {
			t.Errorf("the thread's namespace (the pod's): %v", err)
		}
		if err := CheckPodNetns("/proc/self/ns/net"); !errors.Is(err, ErrNodeNetns) {
			t.Errorf("the process's namespace, from a thread in the pod: %v, want ErrNodeNetns", err)
		}
		return nil
	})
}
