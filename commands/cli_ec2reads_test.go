package commands

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// pool status says where the last pass read the ENIs, when EC2 was last
// read and when the safety net reads it next, in every output form.
func TestStatusShowsWhereThePassReadTheENIs(t *testing.T) {
	_, env := newSim(t, "m5.large")
	dir := t.TempDir()
	vpc(t, env, "--state-dir", dir, "reconcile").want(t, 0)
	first := statusDoc(t, env, dir)
	if got := first.LastReconcile.Observed; !strings.HasPrefix(got, "ec2: first read") {
		t.Errorf("after the first pass observed = %q, want ec2: first read", got)
	}
	vpc(t, env, "--state-dir", dir, "reconcile").want(t, 0)
	s := statusDoc(t, env, dir)
	r := s.EC2Reads
	if s.LastReconcile.Observed != "imds" || r == nil || r.LastRead.IsZero() || r.EveryPass || r.ConfirmNeeded {
		t.Fatalf("at rest: observed %q, ec2Reads %+v; want imds, a last read, the safety net", s.LastReconcile.Observed, r)
	}
	if d := r.NextDue.Sub(r.LastRead); d < 13*time.Minute+30*time.Second || d > 16*time.Minute+30*time.Second {
		t.Errorf("safety net due %v after the last read, want 15 min ± 10 %%", d)
	}
	vpc(t, env, "--state-dir", dir, "pool", "status").want(t, 0, "EC2 READS", "last pass read imds", "EC2 last read", "safety net due")
	vpc(t, env, "--state-dir", dir, "pool", "status", "-o", "wide").want(t, 0, "EC2 READS", "last pass read imds")
	vpc(t, env, "--state-dir", dir, "pool", "status", "-o", "yaml").want(t, 0, "ec2Reads:", "lastRead:", "nextDue:", `observed: "imds"`)

	every := statusDoc(t, with(env, "VPC_CNI_EC2_RESYNC_INTERVAL=0"), dir)
	if !every.EC2Reads.EveryPass || !every.EC2Reads.NextDue.IsZero() {
		t.Errorf("with the interval 0: %+v, want everyPass and no nextDue", every.EC2Reads)
	}
	raw := vpc(t, with(env, "VPC_CNI_EC2_RESYNC_INTERVAL=0"), "--state-dir", dir, "pool", "status", "-o", "json")
	if strings.Contains(raw.stdout, `"nextDue"`) {
		t.Errorf("a zero nextDue is printed:\n%s", raw.stdout)
	}
	vpc(t, with(env, "VPC_CNI_EC2_RESYNC_INTERVAL=0"), "--state-dir", dir, "pool", "status").
		want(t, 0, "every pass reads EC2 (VPC_CNI_EC2_RESYNC_INTERVAL=0)")
}

func statusDoc(t *testing.T, env []string, dir string) PoolStatus {
	t.Helper()
	r := vpc(t, env, "--state-dir", dir, "pool", "status", "-o", "json")
	r.want(t, 0)
	var s PoolStatus
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("%v:\n%s", err, r.stdout)
	}
	if s.LastReconcile == nil {
		t.Fatalf("no lastReconcile:\n%s", r.stdout)
	}
	return s
}
