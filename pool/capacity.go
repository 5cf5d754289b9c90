package pool

import "fmt"

// The pod capacity rule's constants.
const (
	// HostNetworkPods: pods that take no VPC address (the CNI's own and
	// kube-proxy), the "+ 2" of eni-max-pods.txt.
	HostNetworkPods = 2
	// EKS's recommended ceilings where addresses do not bound the pods
	// (prefix delegation, IPv6): 110 pods on instances with at most
	// CapVCPUs vCPUs, 250 above, as the reference's max-pods calculator
	// applies them ("if CPU_COUNT -gt 30"). LowPodCap is also the kubelet's
	// own default.
	LowPodCap  = 110
	HighPodCap = 250
	CapVCPUs   = 30
)

// Capacity modes.
const ModeIPv6 = "ipv6"

// Capacity is the node's true pod capacity (what the kubelet's maxPods
// should be) and how it was reached, for `vpcctl max-pods` to show.
type Capacity struct {
	Mode        string `json:"mode"`        // secondary-ip, prefix or ipv6
	ENIs        int    `json:"enis"`        // ENIs whose addresses pods may use
	SlotsPerENI int    `json:"slotsPerEni"` // IPv4 per ENI less its primary address
	PerSlot     int    `json:"perSlot"`     // pod addresses per slot: 1, or 16 for a /28
	// Addresses: pod IPv4 addresses the ENIs hold at most, ENIs ×
	// SlotsPerENI × PerSlot; 0 when pods take no VPC IPv4 (IPv6 only).
	Addresses   int `json:"addresses"`
	HostNetwork int `json:"hostNetwork"`
	// Formula: Addresses + HostNetwork; 0 when addresses do not bound it.
	Formula int `json:"formula"`
	// Cap: the ceiling applied (prefix delegation, IPv6), 0 for none; CapWhy
	// says where it came from.
	Cap    int    `json:"cap,omitempty"`
	CapWhy string `json:"capWhy,omitempty"`
	// MaxPods is the answer: the formula, capped, or MAX_PODS when it is set
	// and the node can hold that many.
	MaxPods int      `json:"maxPods"`
	Notes   []string `json:"notes,omitempty"`
}

// PodCapacity is the one home of the max pods rule. Secondary IPs: ENIs ×
// (IPv4 per ENI − 1) + 2, as the reference's eni-max-pods.txt; prefix
// delegation: the same with 16 addresses a slot, capped at MAX_PODS_CAP or
// EKS's 110/250 by vCPUs; IPv6: that cap (a /80 never runs out), and the
// IPv4 formula too when pods also get IPv4. ENIs are min(MAX_ENI, the
// instance's card 0 limit), less notOurs (card 0 ENIs that are not ours),
// less the primary with custom networking. MAX_PODS, when set, is the answer
// unless the addresses hold fewer pods.
func PodCapacity(l Limits, c Config, notOurs int) Capacity {
	r := Capacity{Mode: ModeSecondaryIP, SlotsPerENI: SlotsPerENI(l), PerSlot: 1, HostNetwork: HostNetworkPods}
	r.ENIs = EffectiveMaxENIs(l, c) - max(notOurs, 0)
	if notOurs > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d ENI(s) on card 0 are not vpc-cni's: no pod addresses on them", notOurs))
	}
	if c.CustomNetworking {
		r.ENIs--
		r.Notes = append(r.Notes, "custom networking: the primary ENI holds no pod addresses")
	}
	r.ENIs = max(r.ENIs, 0)
	if c.PrefixDelegation {
		r.Mode, r.PerSlot = ModePrefix, PrefixSize
	}
	if !c.IPv4Off {
		r.Addresses = r.ENIs * r.SlotsPerENI * r.PerSlot
		r.Formula = r.Addresses + r.HostNetwork
	}
	r.MaxPods = r.Formula
	if c.IPv6 || c.PrefixDelegation {
		if c.IPv6 {
			r.Mode = ModeIPv6
		}
		r.Cap, r.CapWhy = podCap(l, c)
		if r.Formula == 0 || r.Cap < r.Formula {
			r.MaxPods = r.Cap
		}
	}
	if c.MaxPods > 0 {
		r.maxPodsSet(c.MaxPods)
	}
	return r
}

// podCap is MAX_PODS_CAP, or EKS's ceiling for the instance's vCPUs.
func podCap(l Limits, c Config) (int, string) {
	switch {
	case c.MaxPodsCap > 0:
		return c.MaxPodsCap, "MAX_PODS_CAP"
	case l.VCPUs == 0:
		return LowPodCap, fmt.Sprintf("EKS: %d (vCPUs unknown, so the lower ceiling; set MAX_PODS_CAP=%d for an instance of more than %d vCPUs)",
			LowPodCap, HighPodCap, CapVCPUs)
	case l.VCPUs > CapVCPUs:
		return HighPodCap, fmt.Sprintf("EKS: %d above %d vCPUs (%d)", HighPodCap, CapVCPUs, l.VCPUs)
	}
	return LowPodCap, fmt.Sprintf("EKS: %d at %d vCPUs or fewer (%d)", LowPodCap, CapVCPUs, l.VCPUs)
}

// maxPodsSet applies MAX_PODS: the operator's number, unless the node's
// addresses hold fewer pods.
func (r *Capacity) maxPodsSet(n int) {
	if r.Formula > 0 && n > r.Formula {
		r.Notes = append(r.Notes, fmt.Sprintf("MAX_PODS=%d is more than the addresses hold (%d): %d", n, r.Formula, r.Formula))
		r.MaxPods = r.Formula
		return
	}
	r.Notes = append(r.Notes, fmt.Sprintf("MAX_PODS=%d", n))
	r.MaxPods = n
}
