package maxpods

import (
	"fmt"
	"strings"

	"vpc-cni/internal/printers"
)

// Rows is the report's table; wide adds the ENIs that are not ours, where
// the value goes in Karpenter's and nodeadm's configuration, and the
// instance's vCPUs and hypervisor.
func (r Report) Rows(t *printers.Table, wide bool) {
	cp := r.Capacity
	t.Row("MAX PODS", fmt.Sprint(r.MaxPods))
	t.Row("INSTANCE", fmt.Sprintf("%s (%s): %d ENIs on card 0 x %d IPv4 per ENI", r.InstanceType, r.Source, r.Limits.MaxENIs, r.Limits.IPv4PerENI))
	t.Row("MODE", cp.Mode)
	if cp.Formula > 0 {
		t.Row("FORMULA", fmt.Sprintf("%d ENIs x %d slots x %d = %d addresses, + %d host-network pods = %d",
			cp.ENIs, cp.SlotsPerENI, cp.PerSlot, cp.Addresses, cp.HostNetwork, cp.Formula))
	}
	if cp.Cap > 0 {
		t.Row("CAP", fmt.Sprintf("%d (%s)", cp.Cap, cp.CapWhy))
	}
	for _, n := range cp.Notes {
		t.Row("NOTE", n)
	}
	if wide {
		for _, id := range r.NotOurs {
			t.Row("NOT OURS", id)
		}
		t.Row("KARPENTER", fmt.Sprintf("%s: %d", r.Karpenter.Field, r.MaxPods))
		t.Row("NODEADM", fmt.Sprintf("%s: %d", r.Nodeadm.Field, r.MaxPods))
		if r.Limits.VCPUs > 0 {
			t.Row("VCPUS", fmt.Sprint(r.Limits.VCPUs))
		}
		t.Row("HYPERVISOR", strings.TrimSpace(printers.Dash(r.Hypervisor)))
	}
}
