package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"vpc-cni/internal/testsupport/damage"
	"vpc-cni/store"
)

// The state file is damaged under live pods, and `vpcctl state rebuild`
// brings it back: the pods keep their addresses and wiring, the runtime's
// CHECK and DEL by container ID work, and the next reconcile plans as it did before the damage.
// A pod the runtime's cache does not name keeps its address too, named by
// its host veth.
func TestPrivilegedRebuildUnderLivePods(t *testing.T) {
	targets := []string{"WARM_IP_TARGET=6", "IP_COOLDOWN_PERIOD=0"}
	w := newWorld(t, worldOpts{instanceType: "t3.small", env: targets})
	rt := w.runtime(conflist(w.conf(nil)))
	pods := w.newPods("live", 5)
	for _, p := range pods {
		if _, err := rt.add(p, nil); err != nil {
			t.Fatalf("ADD %s: %v", p.id, err)
		}
	}
	stray := w.newPod("uncached") // added without the runtime's cache
	w.add(stray, mustJSON(t, w.conf(nil)))
	before, planBefore := w.assignments(), w.planJSON()

	if err := damage.Do(filepath.Join(w.stateDir, store.DBFile), "truncated to half"); err != nil {
		t.Fatal(err)
	}
	if r := w.vpcctl(nil, "pool", "status"); r.err == nil || !strings.Contains(string(r.stderr), "state file damaged") {
		t.Fatalf("pool status on the damaged file: %v\n%s", r.err, r.stderr)
	}
	r := w.vpcctl(nil, "state", "rebuild", "--cni-cache-dir", rt.cacheDir, "-o", "json")
	if r.err != nil {
		t.Fatalf("state rebuild: %v\n%s\n%s", r.err, r.stdout, r.stderr)
	}
	t.Logf("rebuild: %s", r.stdout)
	var out struct{ MovedAside string }
	if err := json.Unmarshal(r.stdout, &out); err != nil || out.MovedAside == "" {
		t.Fatalf("rebuild output %v: %s", err, r.stdout)
	}
	if _, err := os.Stat(out.MovedAside); err != nil {
		t.Errorf("the damaged file was not kept: %v", err)
	}

	w.checkStore()
	after := w.assignments()
	if got, want := summary(after, stray.id), summary(before, stray.id); !slices.Equal(got, want) {
		t.Errorf("assignments after rebuild:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := w.planJSON(); got != planBefore {
		t.Errorf("next reconcile's plan after rebuild:\n%s\nwant:\n%s", got, planBefore)
	}
	for _, p := range pods {
		if err := rt.check(p, nil); err != nil {
			t.Errorf("CHECK %s after rebuild: %v", p.id, err)
		}
		if err := rt.del(p, nil); err != nil {
			t.Errorf("DEL %s after rebuild: %v", p.id, err)
		}
	}
	// Its host veth named it: the runtime's DEL finds it by container ID.
	if left := w.assignments(); len(left) != 1 || left[0].Key != stray.id+"/eth0" {
		t.Errorf("after the DELs, want only the uncached pod's assignment, under its container ID, have %+v", left)
	}
}

// summary is each assignment as the rebuild must restore it; the pod the
// cache does not name is compared by address, wiring and namespace only.
func summary(all []store.Assignment, uncachedID string) []string {
	var out []string
	for _, a := range all {
		key, pod := a.Key, a.PodNamespace+"/"+a.PodName
		if strings.HasPrefix(key, uncachedID) || strings.HasPrefix(key, "unknown-") {
			key, pod = "(uncached)", ""
		}
		out = append(out, strings.Join([]string{key, a.IP.String(), a.ENIID, a.HostVeth, a.Netns, pod}, " "))
	}
	slices.Sort(out)
	return out
}

// planJSON is the next reconcile's plan (a dry run), as JSON.
func (w *world) planJSON() string {
	w.tb.Helper()
	r := w.vpcctl(nil, "reconcile", "--dry-run", "-o", "json")
	if r.err != nil {
		w.tb.Fatalf("reconcile --dry-run: %v\n%s", r.err, r.stderr)
	}
	var rep struct {
		Plan struct {
			Actions json.RawMessage `json:"actions"`
		} `json:"plan"`
	}
	if err := json.Unmarshal(r.stdout, &rep); err != nil {
		w.tb.Fatal(err)
	}
	return string(rep.Plan.Actions)
}
