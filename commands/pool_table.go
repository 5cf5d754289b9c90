package commands

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"vpc-cni/pool"
	"vpc-cni/reconcile"
)

func statusTable(t *table, s PoolStatus) {
	n := s.Node
	f := s.Figures
	t.row("NODE", fmt.Sprintf("%s (%s, %s), %s, subnet %s %s", n.InstanceID, n.InstanceType, n.AZ, n.VPCID, n.SubnetID, n.SubnetCIDR))
	t.row("LIMITS", fmt.Sprintf("%d ENIs x %d IPv4 per ENI; using at most %d ENIs, %d pods", n.Limits.MaxENIs, n.Limits.IPv4PerENI, f.MaxENIs, f.MaxPods))
	t.row("POLICY", f.Policy)
	t.row("POOL", fmt.Sprintf("%d free, %d cooling, %d assigned, %d releasing (%d held); shortfall %d, excess %d%s",
		f.Free, f.Cooling, f.Assigned, f.Releasing, f.Total, f.Shortfall, f.Excess, waitingNote(f.Waiting)))
	excessRows(t, s.Excess)
	shortfallRows(t, s.Shortfall)
	if r := s.NodeRules; r != nil {
		t.row("NODE RULES", yesNo(r.InPlace)+": "+r.Detail)
	}
	if s.NoProvisioning != "" {
		t.row("GROWTH", "off: "+s.NoProvisioning)
	}
	if s.GrowBlocked != "" {
		t.row("GROWTH BLOCKED", s.GrowBlocked)
	}
	if s.NoPrefixes != "" {
		t.row("PREFIXES OFF", "until "+s.NoPrefixes+": the subnet had no free /28; growing with single addresses")
	}
	if len(s.Pending) == 0 {
		t.row("NEXT RECONCILE", "nothing to do")
	}
	for _, a := range s.Pending {
		t.row("NEXT RECONCILE", describeAction(a))
	}
	lastPassRow(t, s.LastReconcile)
	ec2ReadsRow(t, s.LastReconcile, s.EC2Reads)
	t.row("PODS", fmt.Sprintf("%d assignments, %d EC2 intents in flight", s.Assignments, s.Intents))
	t.blank()
	t.row("ENI", "DEVICE", "READY", "PRIMARY IP", "BLOCKS", "FREE", "COOLING", "ASSIGNED", "RELEASING")
	for _, e := range s.ENIs {
		t.row(e.ID, e.DeviceIndex, yesNo(e.Ready), e.PrimaryIP, e.Blocks, e.Free, e.Cooling, e.Assigned, e.Releasing)
	}
	if len(s.Pods) > 0 {
		t.blank()
		t.row("POD", "ADDRESS", "ENI", "SINCE")
		for _, p := range s.Pods {
			t.row(p.Pod, p.IP, p.ENIID, p.Since.Format(time.RFC3339))
		}
	}
	if t.wide {
		t.blank()
		t.row("ADDRESS", "BLOCK", "ENI", "STATE", "SINCE", "POD", "OWNER")
		for _, e := range s.ENIs {
			for _, a := range e.Addresses {
				t.row(a.IP, a.Block, e.ID, a.State, a.Since.Format(time.RFC3339), dash(a.Pod), dash(a.Owner))
			}
		}
	}
	t.blank()
	knobRows(t, s.ConfigFile, s.Knobs)
}

func excessRows(t *table, e *ExcessStatus) {
	if e == nil {
		return
	}
	t.row("EXCESS", fmt.Sprintf("%s since %s; released by the first reconcile after %s (RELEASE_DELAY %s)",
		reconcile.Plural(e.Addresses, "address", "addresses"), e.Since.Format(time.RFC3339), e.ReleaseAt.Format(time.RFC3339), time.Duration(e.Delay)))
}

func shortfallRows(t *table, s *ShortfallStatus) {
	if s == nil {
		return
	}
	if s.Addresses > 0 {
		t.row("SHORTFALL", fmt.Sprintf("%s: the next reconcile adds %d, %d cannot be had now",
			reconcile.Plural(s.Addresses, "address", "addresses"), s.Planned, s.Unmet))
	}
	for _, r := range s.Reasons {
		t.row("  BECAUSE", r)
	}
}

func lastPassRow(t *table, r *LastPass) {
	if r == nil {
		return
	}
	line := fmt.Sprintf("%s: %s (%s ago), took %s, %s, calls: %s", r.Outcome, r.Time.Format(time.RFC3339),
		time.Since(r.Time).Round(time.Second), time.Duration(r.Duration).Round(time.Millisecond),
		reconcile.Plural(r.Actions, "action", "actions"), callMap(r.Calls))
	if r.Error != "" {
		line += "; error: " + r.Error
	}
	t.row("LAST RECONCILE", line)
}

// ec2ReadsRow: where the last pass read the ENIs, when EC2 was last read
// and when the safety net reads it next.
func ec2ReadsRow(t *table, last *LastPass, r *EC2Reads) {
	if r == nil {
		return
	}
	var parts []string
	if last != nil && last.Observed != "" {
		parts = append(parts, "last pass read "+last.Observed)
	}
	if r.LastRead.IsZero() {
		parts = append(parts, "EC2 never read yet")
	} else {
		parts = append(parts, fmt.Sprintf("EC2 last read %s (%s ago)", r.LastRead.Format(time.RFC3339),
			time.Since(r.LastRead).Round(time.Second)))
	}
	switch {
	case r.EveryPass:
		parts = append(parts, "every pass reads EC2 (VPC_CNI_EC2_RESYNC_INTERVAL=0)")
	case r.ConfirmNeeded:
		parts = append(parts, "the next pass reads EC2 to confirm this node's changes")
	case !r.NextDue.IsZero():
		parts = append(parts, fmt.Sprintf("safety net due %s (in %s)", r.NextDue.Format(time.RFC3339),
			max(time.Until(r.NextDue), 0).Round(time.Second)))
	}
	t.row("EC2 READS", strings.Join(parts, "; "))
}

// knobRows: every knob as this command resolves it, and as the last pass
// used it when that differs.
func knobRows(t *table, file string, knobs []KnobStatus) {
	if file != "" {
		t.row("CONFIG FILE", file)
	}
	t.row("KNOB", "VALUE", "SOURCE", "LAST PASS")
	for _, k := range knobs {
		last := "-"
		switch {
		case k.LastPass != nil && k.Differs:
			last = fmt.Sprintf("%s (%s)", dash(k.LastPass.Value), k.LastPass.Origin())
		case k.LastPass != nil:
			last = "same"
		}
		t.row(k.Name, dash(k.Value.Value), k.Origin(), last)
	}
}

func waitingNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d pods waiting for an address", n)
}

func describeAction(a pool.Action) string {
	unit := reconcile.Plural(a.Count, "address", "addresses")
	if a.Prefixes {
		unit = reconcile.Plural(a.Count, "/28 prefix", "/28 prefixes")
	}
	switch a.Kind {
	case pool.CreateENI:
		return fmt.Sprintf("create an ENI at device %d with %s (%s)", a.DeviceIndex, unit, a.Reason)
	case pool.Assign:
		return fmt.Sprintf("assign %s to %s (%s)", unit, a.ENIID, a.Reason)
	case pool.Unassign:
		return fmt.Sprintf("release %s from %s (%s)", reconcile.Plural(len(a.Release), "block", "blocks"), a.ENIID, a.Reason)
	case pool.DeleteENI:
		return fmt.Sprintf("delete %s (%s)", a.ENIID, a.Reason)
	}
	return string(a.Kind)
}

// countCalls summarises a list of EC2 calls as "Action xN, ...".
func countCalls(calls []string) string {
	m := map[string]int{}
	for _, c := range calls {
		m[c]++
	}
	return callMap(m)
}

func callMap(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s x%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
