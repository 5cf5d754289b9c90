package e2e

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"vpc-cni/internal/testsupport/damage"
	"vpc-cni/store"
)

// `vpcctl state rebuild` under live IPv6-only and dual-stack pods: each
// gets back its IPv4, its /128 and its egress address from the kernel and
// the runtime's cache, and the runtime's CHECK and DEL work after it.
func TestPrivilegedRebuildIPv6AndDualStack(t *testing.T) {
	for _, mode := range []struct {
		name string
		env  []string
	}{{"ipv6", ipv6Env}, {"dual", dualEnv}} {
		t.Run(mode.name, func(t *testing.T) {
			w := newWorld(t, worldOpts{instanceType: "t3.medium", env: mode.env})
			rt := w.runtime(conflist(w.conf(nil)))
			pods := w.newPods("live6", 3)
			for _, p := range pods {
				if _, err := rt.add(p, nil); err != nil {
					t.Fatalf("ADD %s: %v", p.id, err)
				}
			}
			before := summary6(w.assignments())
			if err := damage.Do(filepath.Join(w.stateDir, store.DBFile), "truncated to half"); err != nil {
				t.Fatal(err)
			}
			// --force: a truncation may leave a small file sound; the rebuild
			// starts from nothing either way.
			r := w.vpcctl(nil, "state", "rebuild", "--force", "--cni-cache-dir", rt.cacheDir, "-o", "json")
			if r.err != nil {
				t.Fatalf("state rebuild: %v\n%s\n%s", r.err, r.stdout, r.stderr)
			}
			w.checkStore()
			if got := summary6(w.assignments()); !slices.Equal(got, before) {
				t.Fatalf("assignments after rebuild:\n%s\nwant:\n%s\nrebuild said: %s", strings.Join(got, "\n"), strings.Join(before, "\n"), r.stdout)
			}
			w.reconcile(mode.env...)
			for _, p := range pods {
				if err := rt.check(p, nil); err != nil {
					t.Errorf("CHECK %s after rebuild: %v", p.id, err)
				}
				if err := rt.del(p, nil); err != nil {
					t.Errorf("DEL %s after rebuild: %v", p.id, err)
				}
			}
			w.assertNodeClean()
		})
	}
}

func summary6(all []store.Assignment) []string {
	var out []string
	for _, a := range all {
		out = append(out, fmt.Sprintf("%s %s %s %s %s %s %s/%s", a.Key, a.IP, a.IPv6, a.EgressIP, a.ENIID, a.HostVeth, a.PodNamespace, a.PodName))
	}
	slices.Sort(out)
	return out
}
