package commands

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"vpc-cni/store"
)

// A command that must wait for the reconcile lock says so at once on
// stderr: which file, held by whom since when, and when it gives up; in a
// pipe nothing more (no progress line), and it goes on when the lock comes.
func TestLockWaitIsSaid(t *testing.T) {
	_, env := newSim(t, "m5.large")
	dir := t.TempDir()
	vpc(t, env, "--state-dir", dir, "reconcile").want(t, 0)
	// --timeout bounds the test when no line comes before the command ends.
	for _, args := range [][]string{{"reconcile", "--wait", "--timeout", "10s"}, {"pool", "warm", "--ip-target", "2", "--timeout", "10s"}} {
		st, err := store.Open(dir, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		unlock, ok, err := st.LockReconcile(false, 0)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		cmd := exec.Command(vpcctl, append([]string{"--state-dir", dir}, args...)...)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(stderr).ReadString('\n')
		unlock()
		rest, _ := io.ReadAll(stderr)
		err = cmd.Wait()
		want := fmt.Sprintf("vpcctl: waiting for the reconcile lock %s, held by pid %d since ", st.OuterLockPath(), os.Getpid())
		if !strings.HasPrefix(line, want) || !strings.Contains(line, "giving up at") || err != nil || strings.Contains(string(rest), "\r") {
			t.Errorf("%v: exit %v; stderr %q then %q, want %q...", args, err, line, rest, want)
		}
	}
}
