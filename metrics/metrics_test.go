package metrics

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"vpc-cni/pool"
)

var sampleLine = regexp.MustCompile(`^([a-z_][a-z0-9_]*)(\{[a-z_][a-z0-9_]*="[^"]*"(,[a-z_][a-z0-9_]*="[^"]*")*\})? -?[0-9.e+-]+$`)

func sampleInput() Input {
	return Input{
		Figures:     pool.Figures{ENIs: 2, MaxENIs: 3, MaxPods: 11, Free: 3, Cooling: 1, Assigned: 2, Shortfall: 1},
		ENIs:        []ENI{{ID: "eni-a", DeviceIndex: 0, Free: 1, Assigned: 2}, {ID: "eni-b", DeviceIndex: 1, Free: 2, Cooling: 1}},
		Assignments: 2, GrowBlocked: true, Full: pool.Fullness{Full: true, Limit: pool.LimitSubnet},
		Counters:      map[string]int64{"cni_adds": 7, "actions_assign_ok": 2},
		LastReconcile: time.Unix(1764500000, 0), LastDuration: 40 * time.Millisecond,
		LastCalls: map[string]int{"DescribeNetworkInterfaces": 1},
	}
}

// TestRenderIsValidExposition checks the text format rule by rule: every
// sample belongs to a family declared with HELP and TYPE before it.
func TestRenderIsValidExposition(t *testing.T) {
	var b strings.Builder
	if err := Render(&b, sampleInput()); err != nil {
		t.Fatal(err)
	}
	typed := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "# TYPE ") {
			typed[strings.Fields(line)[2]] = true
			continue
		}
		if strings.HasPrefix(line, "# HELP ") {
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("not a valid sample line: %q", line)
		}
		if !typed[m[1]] {
			t.Fatalf("sample %q before its # TYPE", line)
		}
	}
	for _, want := range []string{
		`vpc_cni_addresses{state="cooling"} 1`,
		`vpc_cni_eni_addresses{eni="eni-b",device="1",state="free"} 2`,
		`vpc_cni_grow_blocked 1`,
		`vpc_cni_pool_full{limit="subnet"} 1`,
		`vpc_cni_pool_full{limit="eni-limit"} 0`,
		`vpc_cni_events_total{name="cni_adds"} 7`,
		`vpc_cni_last_reconcile_ec2_calls{action="DescribeNetworkInterfaces"} 1`,
		`vpc_cni_last_reconcile_duration_seconds 0.04`,
	} {
		if !strings.Contains(b.String(), want+"\n") {
			t.Errorf("missing %q in\n%s", want, b.String())
		}
	}
}

func TestWriteFileReplacesAtomically(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vpc_cni.prom")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, sampleInput()); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || !strings.HasPrefix(string(got), "# HELP vpc_cni_enis ") {
		t.Fatalf("file = %.60q, %v", got, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
}
