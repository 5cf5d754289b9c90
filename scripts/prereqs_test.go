package scripts

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"vpc-cni/internal/testsupport/testenv"
)

// tools every run of the script needs (bash and what it calls), besides
// the ones a case gives it.
var base = []string{"bash", "id"}

// prereqs runs scripts/prereqs.sh target with PATH holding only the named
// commands (links to the machine's), as uid (-1: the test's own). It
// returns what it printed and its exit code.
func prereqs(t *testing.T, target string, uid int, have ...string) (string, int) {
	t.Helper()
	bin := t.TempDir()
	for _, d := range []string{filepath.Dir(bin), bin} { // another uid runs the links
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range append(have, base...) {
		path, err := exec.LookPath(name)
		if err != nil {
			t.Skipf("this machine has no %s to offer the script: %v", name, err)
		}
		if err := os.Symlink(path, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	script, err := filepath.Abs("prereqs.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "bash"), script, target)
	cmd.Env = []string{"PATH=" + bin}
	if uid >= 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

var clusterTools = []string{"runc", "nft", "ip", "nsenter", "unshare"}

func without(list []string, drop ...string) []string {
	var out []string
	for _, s := range list {
		if !strings.Contains(" "+strings.Join(drop, " ")+" ", " "+s+" ") {
			out = append(out, s)
		}
	}
	return out
}

func requireRoot(t *testing.T) {
	t.Helper()
	testenv.RequireRoot(t, "runs the script as root and as another user")
}

func TestPrivilegedClusterTargetsStopAtOnceNamingWhatToInstall(t *testing.T) {
	requireRoot(t)
	for _, target := range []string{"cluster", "test-cluster"} {
		out, code := prereqs(t, target, -1, without(clusterTools, "runc", "nft")...)
		if code != 1 {
			t.Errorf("make %s without runc and nft: exit %d, want 1:\n%s", target, code, out)
		}
		for _, want := range []string{"make " + target + ": no runc: ", "make " + target + ": no nft: ",
			"apt-get install -y runc nftables\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("make %s: no %q in:\n%s", target, want, out)
			}
		}
	}
}

func TestPrivilegedEveryTargetPassesWithWhatItNeeds(t *testing.T) {
	requireRoot(t)
	needs := map[string][]string{
		"cluster": clusterTools, "test-cluster": clusterTools, "chaos": nil, "demo": {"ip"},
		"conformance": {"nsenter", "busybox", "dash", "nc.openbsd", "curl", "dig", "ldd"},
	}
	for target, have := range needs {
		if out, code := prereqs(t, target, -1, have...); code != 0 || out != "" {
			t.Errorf("make %s with %v: exit %d, printed %q; want 0 and nothing", target, have, code, out)
		}
	}
}

func TestPrivilegedRootIsNamedBeforeNamespacesAreMade(t *testing.T) {
	requireRoot(t)
	for _, target := range []string{"cluster", "test-cluster", "conformance", "chaos"} {
		out, code := prereqs(t, target, 65534, clusterTools...)
		if code != 1 || !strings.Contains(out, "make "+target+": not root: ") {
			t.Errorf("make %s as uid 65534: exit %d:\n%s", target, code, out)
		}
	}
}

func TestPrivilegedConformanceNamesAgnhostsTools(t *testing.T) {
	requireRoot(t)
	out, code := prereqs(t, "conformance", -1, "nsenter", "dash", "ldd")
	if code != 1 || !strings.Contains(out, "apt-get install -y busybox-static netcat-openbsd curl bind9-dnsutils\n") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// make test and make demo go on without what only some of their tests or
// steps need, saying what is skipped and how to install it.
func TestPrivilegedSoftTargetsSayWhatTheySkipAndGoOn(t *testing.T) {
	requireRoot(t)
	out, code := prereqs(t, "test", -1)
	if code != 0 || !strings.Contains(out, "make test: no runc: ") || !strings.Contains(out, "apt-get install runc") {
		t.Errorf("make test with nothing: exit %d:\n%s", code, out)
	}
	if strings.Count(out, "apt-get install containerd") != 1 {
		t.Errorf("make test: containerd's three commands should be said once:\n%s", out)
	}
	out, code = prereqs(t, "demo", -1)
	if code != 0 || !strings.Contains(out, "make demo: no ip: ") {
		t.Errorf("make demo without ip: exit %d:\n%s", code, out)
	}
}
