package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// familyContestants are vpc-cni in each IP family mode on one node whose
// pool holds both warm IPv4 addresses and the primary ENI's /80 (a
// dual-stack pass made it): each mode is its own configuration file (the
// conflist's configFile), so the only difference between them is what an
// ADD takes and wires. The background refill is off for all of them: a
// pass run with one mode's knobs would reshape the pool the others use.
func familyContestants(b *testing.B, w *world, env []string) []*contestant {
	dir := installPlugins(b)
	modes := []struct {
		name  string
		knobs []string
	}{
		{"ipv4", nil},
		{"dual-stack", []string{"ENABLE_IPv6=true"}},
		{"ipv6", []string{"ENABLE_IPv6=true", "ENABLE_IPv4=false", "ENABLE_PREFIX_DELEGATION=true"}},
		{"ipv6-no-egress", []string{"ENABLE_IPv6=true", "ENABLE_IPv4=false", "ENABLE_PREFIX_DELEGATION=true", "ENABLE_V4_EGRESS=false"}},
	}
	var all []*contestant
	for _, m := range modes {
		file := filepath.Join(b.TempDir(), "config")
		if err := os.WriteFile(file, []byte(strings.Join(append(append([]string{}, env...), m.knobs...), "\n")+"\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		conf := mustJSON(b, w.conf(map[string]any{"configFile": file}))
		all = append(all, &contestant{name: m.name, path: filepath.Join(dir, "vpc-cni"), conf: conf,
			env: []string{"CNI_PATH=" + dir}, settle: func() {}})
	}
	return all
}

// familyWorld is a c5.4xlarge in dual-stack mode with a warm pool of
// burstSize IPv4 addresses that DEL makes reusable at once.
func familyWorld(b *testing.B) (*world, []string) {
	env := []string{"WARM_IP_TARGET=" + strconv.Itoa(burstSize), "IP_COOLDOWN_PERIOD=0", "RELEASE_DELAY=1"}
	w := newWorld(b, worldOpts{instanceType: "c5.4xlarge", env: append(append([]string{}, env...), "ENABLE_IPv6=true")})
	return w, env
}

// FamilyChurn: BenchmarkChurn's workload (ADD then DEL of one pod) in each
// family mode, rounds rotated. Target: an IPv6 or dual-stack ADD costs at
// most 1.2x an IPv4 ADD.
func BenchmarkFamilyChurn(b *testing.B) {
	w, env := familyWorld(b)
	all := familyContestants(b, w, env)
	rotated(b, roundsOf(b, w, all, (*contestant).churn))
	reportFamilies(b, "family-churn", all)
}

// FamilyBurst: BenchmarkBurst's workload (burstSize ADDs, then their DELs)
// in each family mode; between rounds, off the clock, a pass brings the
// IPv4 pool back to its target.
func BenchmarkFamilyBurst(b *testing.B) {
	w, env := familyWorld(b)
	all := familyContestants(b, w, env)
	for _, c := range all {
		c.settle = func() { w.settleFree(burstSize) }
	}
	rotated(b, roundsOf(b, w, all, (*contestant).burst))
	reportFamilies(b, "family-burst", all)
}

// reportFamilies reports each mode's medians and p99s and their ratios to
// IPv4's, and prints them as a table.
func reportFamilies(b *testing.B, workload string, all []*contestant) {
	ref := all[0]
	var tab strings.Builder
	fmt.Fprintf(&tab, "\n%s (medians of %d ADDs and %d DELs each)\n", workload, len(ref.add.d), len(ref.del.d))
	fmt.Fprintf(&tab, "%-16s %10s %10s %10s %10s\n", "mode", "ADD ms", "ADD ratio", "DEL ms", "DEL ratio")
	for _, c := range all {
		c.add.report(b, workload+"-"+c.name+"-add")
		c.del.report(b, workload+"-"+c.name+"-del")
		addR, delR := c.add.pct(0.5)/ref.add.pct(0.5), c.del.pct(0.5)/ref.del.pct(0.5)
		if c != ref {
			b.ReportMetric(addR, workload+"-"+c.name+"-add-ratio")
			b.ReportMetric(delR, workload+"-"+c.name+"-del-ratio")
		}
		fmt.Fprintf(&tab, "%-16s %10.2f %10.2f %10.2f %10.2f\n", c.name, c.add.pct(0.5), addR, c.del.pct(0.5), delR)
	}
	fmt.Fprintf(&tab, "target: IPv6 and dual-stack ADD ratio <= 1.20; load average %s", loadAvg())
	b.Log(tab.String())
}
