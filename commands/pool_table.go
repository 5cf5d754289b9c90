package commands

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"vpc-cni/pool"
)

func statusTable(t *table, s PoolStatus) {
	n := s.Node
	f := s.Figures
	t.row("NODE", fmt.Sprintf("%s (%s, %s), %s, subnet %s %s", n.InstanceID, n.InstanceType, n.AZ, n.VPCID, n.SubnetID, n.SubnetCIDR))
	t.row("LIMITS", fmt.Sprintf("%d ENIs x %d IPv4 per ENI; using at most %d ENIs, %d pods", n.Limits.MaxENIs, n.Limits.IPv4PerENI, f.MaxENIs, f.MaxPods))
	t.row("POLICY", f.Policy)
	t.row("POOL", fmt.Sprintf("%d free, %d cooling, %d assigned, %d releasing (%d held); shortfall %d, excess %d%s",
		f.Free, f.Cooling, f.Assigned, f.Releasing, f.Total, f.Shortfall, f.Excess, waitingNote(f.Waiting)))
	if r := s.NodeRules; r != nil {
		t.row("NODE RULES", yesNo(r.InPlace)+": "+r.Detail)
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
	if r := s.LastReconcile; r != nil {
		line := fmt.Sprintf("%s (%s ago), took %s, %d actions, calls: %s", r.Time.Format(time.RFC3339),
			time.Since(r.Time).Round(time.Second), r.Duration.Round(time.Millisecond), r.Actions, callMap(r.Calls))
		if r.Error != "" {
			line += "; error: " + r.Error
		}
		t.row("LAST RECONCILE", line)
	}
	t.row("PODS", fmt.Sprintf("%d assignments, %d EC2 intents in flight", s.Assignments, s.Intents))
	t.blank()
	t.row("ENI", "DEVICE", "READY", "PRIMARY IP", "BLOCKS", "FREE", "COOLING", "ASSIGNED", "RELEASING")
	for _, e := range s.ENIs {
		t.row(e.ID, e.DeviceIndex, yesNo(e.Ready), e.PrimaryIP, e.Blocks, e.Free, e.Cooling, e.Assigned, e.Releasing)
	}
	if t.wide {
		t.blank()
		t.row("ADDRESS", "BLOCK", "ENI", "STATE", "SINCE", "OWNER")
		for _, e := range s.ENIs {
			for _, a := range e.Addresses {
				t.row(a.IP, a.Block, e.ID, a.State, a.Since.Format(time.RFC3339), dash(a.Owner))
			}
		}
	}
	t.blank()
	t.row("TARGET", "VALUE", "SOURCE")
	for _, v := range s.Targets {
		t.row(v.Name, dash(v.Value), v.Source)
	}
}

func waitingNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d pods waiting for an address", n)
}

func describeAction(a pool.Action) string {
	unit := "addresses"
	if a.Prefixes {
		unit = "/28 prefixes"
	}
	switch a.Kind {
	case pool.CreateENI:
		return fmt.Sprintf("create an ENI at device %d with %d %s (%s)", a.DeviceIndex, a.Count, unit, a.Reason)
	case pool.Assign:
		return fmt.Sprintf("assign %d %s to %s (%s)", a.Count, unit, a.ENIID, a.Reason)
	case pool.Unassign:
		return fmt.Sprintf("release %d blocks from %s (%s)", len(a.Release), a.ENIID, a.Reason)
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
