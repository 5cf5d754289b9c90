package status

import (
	"fmt"
	"strings"
	"time"

	"vpc-cni/internal/printers"
	"vpc-cni/pool"
	"vpc-cni/reconcile"
	"vpc-cni/settings"
)

// Table is the table form of s (-o table; -o wide adds every address and
// every knob, which -o table sums up in one line to fit a screen).
func Table(t *printers.Table, s PoolStatus) {
	n := s.Node
	f := s.Figures
	t.Row("NODE", fmt.Sprintf("%s (%s, %s), %s, subnet %s %s", n.InstanceID, n.InstanceType, n.AZ, n.VPCID, n.SubnetID, n.SubnetCIDR))
	t.Row("LIMITS", fmt.Sprintf("%s x %d IPv4 per ENI; using at most %s, %s", printers.Plural(n.Limits.MaxENIs, "ENI", "ENIs"), n.Limits.IPv4PerENI,
		printers.Plural(f.MaxENIs, "ENI", "ENIs"), printers.Plural(f.MaxPods, "pod", "pods")))
	t.Row("POLICY", f.Policy)
	t.Row("POOL", fmt.Sprintf("%d free, %d cooling, %d assigned, %d releasing (%d held); shortfall %d, excess %d%s",
		f.Free, f.Cooling, f.Assigned, f.Releasing, f.Total, f.Shortfall, f.Excess, waitingNote(f.Waiting)))
	ipv6Row(t, s.IPv6)
	profileRows(t, s.Profiles)
	excessRows(t, s.Excess)
	shortfallRows(t, s.Shortfall)
	notOursRows(t, s.NotOurs)
	conditionRows(t, s)
	if len(s.Pending) == 0 {
		t.Row("NEXT RECONCILE", "nothing to do")
	}
	for _, a := range s.Pending {
		t.Row("NEXT RECONCILE", DescribeAction(a))
	}
	lastPassRow(t, s.LastReconcile)
	ec2ReadsRow(t, s.LastReconcile, s.EC2Reads)
	t.Row("PODS", fmt.Sprintf("%s, %s in flight", printers.Plural(s.Assignments, "assignment", "assignments"), printers.Plural(s.Intents, "EC2 intent", "EC2 intents")))
	t.Blank()
	t.Header("ENI", "DEVICE", "READY", "PRIMARY IP", "BLOCKS", "FREE", "COOLING", "ASSIGNED", "RELEASING", "POOL")
	for _, e := range s.ENIs {
		t.Row(e.ID, e.DeviceIndex, printers.YesNo(e.Ready), e.PrimaryIP, e.Blocks, e.Free, e.Cooling, e.Assigned, e.Releasing, poolName(e))
	}
	podRows(t, s)
	t.Blank()
	if t.Wide {
		KnobRows(t, s.ConfigFile, s.Knobs)
		return
	}
	knobSummaryRows(t, s.ConfigFile, s.Knobs)
}

// conditionRows: the node's conditions that hold growth back or change it,
// one row each when present.
func conditionRows(t *printers.Table, s PoolStatus) {
	if r := s.NodeRules; r != nil {
		t.Row("NODE RULES", r.State+": "+r.Detail)
	}
	if s.NoProvisioning != "" {
		t.Row("GROWTH", "off: "+s.NoProvisioning)
	}
	if s.Full != nil && s.Full.Full {
		t.Row("FULL", s.Full.Message())
	}
	if s.GrowBlocked != "" {
		t.Row("GROWTH BLOCKED", s.GrowBlocked)
	}
	if s.NoPrefixes != "" {
		t.Row("PREFIXES OFF", "until "+s.NoPrefixes+": the subnet had no free /28; growing with single addresses")
	}
}

// knobSummaryRows: how many knobs are set, how many the last pass used
// otherwise, and where to see them all.
func knobSummaryRows(t *printers.Table, file string, knobs []KnobStatus) {
	if file != "" {
		t.Row("CONFIG FILE", file)
	}
	set, changed := 0, 0
	for _, k := range knobs {
		if k.Source != settings.FromDefault {
			set++
		}
		if k.Differs {
			changed++
		}
	}
	line := fmt.Sprintf("%d of %d knobs set (file, env or store), the rest at their defaults", set, len(knobs))
	if changed > 0 {
		line += fmt.Sprintf(", %d from the last pass", changed)
	}
	t.Row("KNOBS", line+"; vpcctl pool status -o wide shows every knob")
}

// podRows: who holds each address; with -o wide, every address.
func podRows(t *printers.Table, s PoolStatus) {
	if len(s.Pods) > 0 {
		t.Blank()
		t.Header("POD", "ADDRESS", "ENI", "SINCE")
		for _, p := range s.Pods {
			t.Row(p.Pod, podAddresses(p), p.ENIID, p.Since.Format(time.RFC3339))
		}
	}
	if t.Wide {
		t.Blank()
		t.Header("ADDRESS", "BLOCK", "ENI", "STATE", "SINCE", "POD", "OWNER")
		for _, e := range s.ENIs {
			for _, a := range e.Addresses {
				t.Row(a.IP, a.Block, e.ID, a.State, a.Since.Format(time.RFC3339), printers.Dash(a.Pod), printers.Dash(a.Owner))
			}
		}
	}
}

func excessRows(t *printers.Table, e *ExcessStatus) {
	if e == nil {
		return
	}
	t.Row("EXCESS", fmt.Sprintf("%s since %s; released by the first reconcile after %s (RELEASE_DELAY %s)",
		reconcile.Plural(e.Addresses, "address", "addresses"), e.Since.Format(time.RFC3339), e.ReleaseAt.Format(time.RFC3339), e.Delay.Std()))
}

func shortfallRows(t *printers.Table, s *ShortfallStatus) {
	if s == nil {
		return
	}
	if s.Addresses > 0 {
		t.Row("SHORTFALL", fmt.Sprintf("%s: the next reconcile adds %d, %d cannot be had now",
			reconcile.Plural(s.Addresses, "address", "addresses"), s.Planned, s.Unmet))
	}
	for _, r := range s.Reasons {
		t.Row("  BECAUSE", r)
	}
}

func lastPassRow(t *printers.Table, r *LastPass) {
	if r == nil {
		return
	}
	line := fmt.Sprintf("%s: %s (%s ago), took %s, %s, calls: %s", r.Outcome, r.Time.Format(time.RFC3339),
		time.Since(r.Time).Round(time.Second), r.Duration.Std().Round(time.Millisecond),
		reconcile.Plural(r.Actions, "action", "actions"), printers.CallMap(r.Calls))
	if r.Error != "" {
		line += "; error: " + r.Error
	}
	t.Row("LAST RECONCILE", line)
}

// ec2ReadsRow: where the last pass read the ENIs, when EC2 was last read
// and when the safety net reads it next.
func ec2ReadsRow(t *printers.Table, last *LastPass, r *EC2Reads) {
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
	t.Row("EC2 READS", strings.Join(parts, "; "))
}

// KnobRows: every knob as this command resolves it, its default, and as
// the last pass used it when that differs.
func KnobRows(t *printers.Table, file string, knobs []KnobStatus) {
	if file != "" {
		t.Row("CONFIG FILE", file)
	}
	t.Header("KNOB", "VALUE", "SOURCE", "DEFAULT", "LAST PASS")
	for _, k := range knobs {
		last := "-"
		switch {
		case k.LastPass != nil && k.Differs:
			last = fmt.Sprintf("%s (%s)", printers.Dash(k.LastPass.Value), k.LastPass.Origin())
		case k.LastPass != nil:
			last = "same"
		}
		t.Row(k.Name, printers.Dash(k.Value.Value), k.Origin(), printers.Dash(k.Default), last)
	}
}

func waitingNote(n int) string {
	if n == 0 {
		return ""
	}
	return "; " + printers.Plural(n, "pod", "pods") + " waiting for an address"
}

// DescribeAction is one planned action in words.
func DescribeAction(a pool.Action) string {
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

// ipv6Row says what the IPv6 pool is (ENABLE_IPv6 or an egress range).
func ipv6Row(t *printers.Table, s *IPv6PoolStatus) {
	if s == nil {
		return
	}
	if s.Mode != pool.FamilyIPv4 {
		prefix := "no /80 yet (the next reconcile assigns one)"
		if s.Prefix != "" {
			prefix = s.Prefix + " on " + s.ENIID
		}
		t.Row("IPV6 POOL", fmt.Sprintf("%s: %s; %d assigned, %d cooling, %d from a replaced /80; warm targets do not apply",
			s.Mode, prefix, s.Assigned, s.Cooling, s.Stale))
	}
	if s.EgressRange != "" {
		t.Row("EGRESS", fmt.Sprintf("%s: %d assigned", s.EgressRange, s.EgressAssigned))
	}
}

// podAddresses lists a pod's addresses: IPv4, IPv6, egress.
func podAddresses(p PodStatus) string {
	var out []string
	for _, a := range []string{p.IP, p.IPv6, p.EgressIP} {
		if a != "" {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, ",")
}

// poolName is the pool an ENI serves, for the table.
func poolName(e ENIStatus) string {
	switch {
	case strings.HasPrefix(e.GroupsDrift, reconcile.ProfileUnknown):
		return "unknown (no new pods until EC2 is read)"
	case e.GroupsDrift != "":
		return e.Profile + " (groups drifted: no new pods)"
	}
	return pool.Pool(e.Profile).String()
}
