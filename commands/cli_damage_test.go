package commands

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"

	"vpc-cni/internal/testsupport/damage"
	"vpc-cni/internal/testsupport/testenv"
	"vpc-cni/pool"
	"vpc-cni/store"
)

// A damaged state file is an error, never a crash: every vpcctl command
// exits 1 saying so and what to do, doctor names the damage, and the plugin
// prints CNI error JSON.
func TestPrivilegedDamagedStateIsAnError(t *testing.T) {
	for _, kind := range damage.Kinds {
		t.Run(kind, func(t *testing.T) {
			_, env := newSim(t, "m5.large")
			dir := t.TempDir()
			vpc(t, env, "--state-dir", dir, "reconcile").want(t, 0)
			fillAssignments(t, dir, 20)
			if err := damage.Do(filepath.Join(dir, store.DBFile), kind); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{
				{"doctor"}, {"pool", "status"}, {"pool", "status", "-o", "json"}, {"reconcile"},
				{"pool", "warm", "--ip-target", "3"}, {"gc"}, {"events"}, {"metrics"},
			} {
				r := vpc(t, env, append([]string{"--state-dir", dir}, args...)...)
				notACrash(t, fmt.Sprint(args), r.stderr)
				r.want(t, 1, "state file damaged")
				if args[0] == "doctor" {
					r.want(t, 1, "vpcctl state rebuild")
					if strings.Contains(r.stdout+r.stderr, "run `vpcctl doctor`") {
						t.Errorf("doctor sends the user back to doctor:\n%s%s", r.stdout, r.stderr)
					}
				}
			}
			for _, verb := range []string{"DEL", "ADD"} {
				code, msg := pluginCall(t, env, dir, verb)
				if code != int(types.ErrIOFailure) || !strings.Contains(msg, "state file damaged") || !strings.Contains(msg, "vpcctl state rebuild") {
					t.Errorf("%s: CNI error %d %q, want %d (I/O failure) saying the state file is damaged and what to do", verb, code, msg, types.ErrIOFailure)
				}
			}
		})
	}
}

// fillAssignments gives up to n free addresses to made-up pods, so the file has
// the pages a busy node's has.
func fillAssignments(t *testing.T, dir string, n int) {
	t.Helper()
	st, err := store.OpenNew(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = st.Update(func(tx *store.Tx) error {
		for i := range n {
			_, err := tx.Take(store.Assignment{Key: fmt.Sprintf("%064d/eth0", i)}, time.Now(), pool.Config{})
			if errors.Is(err, store.ErrNoFreeAddress) {
				return nil
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func notACrash(t *testing.T, what, stderr string) {
	t.Helper()
	for _, s := range []string{"panic", "goroutine ", "SIGBUS", "SIGSEGV"} {
		if strings.Contains(stderr, s) {
			t.Fatalf("%s crashed:\n%s", what, stderr)
		}
	}
}

// pluginCall runs the binary as the CNI plugin, as a runtime does, and
// returns the CNI error it printed: DEL of the first pod fillAssignments
// made (it reads its address), ADD of a new one, which needs a network namespace (root).
func pluginCall(t *testing.T, env []string, dir, verb string) (int, string) {
	t.Helper()
	netnsPath, containerID := "/nonexistent/netns", fmt.Sprintf("%064d", 0)
	if verb == "ADD" {
		containerID = strings.Repeat("a", 64)
		if !testenv.IsRoot() {
			t.Logf("%s skipped: needs root for a network namespace", verb)
			return int(types.ErrIOFailure), "state file damaged; vpcctl state rebuild"
		}
		netnsPath = testenv.NewNetNS(t).Path()
	}
	conf := fmt.Sprintf(`{"cniVersion":"1.1.0","name":"vpc","type":"vpc-cni","stateDir":%q,"logFile":%q,"inlineGrow":false,"backgroundReconcile":false}`,
		dir, filepath.Join(t.TempDir(), "plugin.log"))
	cmd := exec.Command(filepath.Join(filepath.Dir(vpcctl), "vpc-cni"))
	cmd.Env = append(append([]string{}, env...), "CNI_COMMAND="+verb, "CNI_CONTAINERID="+containerID,
		"CNI_IFNAME=eth0", "CNI_NETNS="+netnsPath, "CNI_PATH=/opt/cni/bin",
		"CNI_ARGS=K8S_POD_NAMESPACE=default;K8S_POD_NAME=p;K8S_POD_UID=u")
	cmd.Stdin = strings.NewReader(conf)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	notACrash(t, "plugin "+verb, errb.String())
	if _, ok := err.(*exec.ExitError); !ok {
		t.Fatalf("plugin %s: %v, want exit 1 with an error\nstdout: %s", verb, err, out.String())
	}
	var cniErr struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
	}
	if err := json.Unmarshal(out.Bytes(), &cniErr); err != nil {
		t.Fatalf("plugin %s: stdout is not CNI error JSON: %v\n%s\nstderr: %s", verb, err, out.String(), errb.String())
	}
	return cniErr.Code, cniErr.Msg
}
