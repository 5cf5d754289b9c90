package migrate

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"vpc-cni/cloud"
	"vpc-cni/internal/awsnode"
	"vpc-cni/netns"
	"vpc-cni/status"
	"vpc-cni/store"
)

// Pod is one pod interface of the checkpoint (or wired in the
// kernel without it) and what migrate does with it.
type Pod struct {
	Key      string `json:"key"`
	IP       string `json:"ip"`
	ENI      string `json:"eni,omitempty"`
	Profile  string `json:"profile,omitempty"` // the profile of its ENI: recorded as that profile's pod
	HostVeth string `json:"hostVeth"`
	Netns    string `json:"netns,omitempty"`
	Pod      string `json:"pod,omitempty"`
	Adopted  bool   `json:"adopted"`        // recorded as an assignment
	Note     string `json:"note,omitempty"` // why not, or what is unknown
}

// migration is what migrate will record: the checkpoint's pods as
// assignments, checked against the kernel and EC2.
type migration struct {
	adopt []store.Assignment // the checkpoint's live pods
	pods  []Pod              // every checkpoint pod, adopted or not
	// unlisted are pod veths with a /32 route the checkpoint does not name:
	// restored as `state rebuild` restores them, so their addresses are
	// never handed out again.
	unlisted []netns.PodWiring
}

// planMigration matches the checkpoint's pods with the kernel's wiring and
// EC2's addresses. A pod whose host veth is gone is left out, as the
// reference's own restore prunes it; a pod whose veth routes another
// address, or whose address EC2 does not list on the node's attached ENIs,
// is an error naming every such pod, and nothing is recorded.
func planMigration(pods []awsnode.Pod, wired []netns.PodWiring, enis []cloud.ENIInfo, prefix string) (migration, error) {
	var m migration
	byVeth := map[string]netns.PodWiring{}
	for _, w := range wired {
		byVeth[w.HostVeth] = w
	}
	owner := addressOwners(enis)
	var problems []string
	named := map[string]bool{}
	for _, p := range pods {
		veth := netns.HostVethNameWith(prefix, p.Namespace, p.Name, p.ContainerID) // aws-node's AWS_VPC_K8S_CNI_VETHPREFIX, carried
		named[veth] = true
		if !p.IP.IsValid() {
			problems = m.addIPv6Pod(p, veth, byVeth, enis, problems)
			continue
		}
		out := Pod{Key: p.Key(), IP: p.IP.String(), HostVeth: veth, Pod: status.PodName(p.Namespace, p.Name)}
		w, wiredUp := byVeth[veth]
		eni, onNode := owner[p.IP]
		switch {
		case !wiredUp:
			out.Note = "host veth absent: the pod is gone; its address stays free (the reference prunes it too)"
		case w.IP.IsValid() && w.IP != p.IP:
			problems = append(problems, fmt.Sprintf("%s (%s): its host veth %s routes %s, not %s", out.Pod, p.Key(), veth, w.IP, p.IP))
		case !onNode || strings.HasPrefix(eni, primaryMark):
			problems = append(problems, fmt.Sprintf("%s (%s, %s)%s", p.IP, out.Pod, p.Key(), notOnNode(eni)))
		default:
			out.ENI, out.Netns, out.Adopted = eni, w.Netns, true
			if w.Netns == "" {
				out.Note = "its network namespace was not found: kept until the runtime's DEL"
			}
			m.adopt = append(m.adopt, store.Assignment{ContainerID: p.ContainerID, IfName: p.IfName,
				Network: p.Network, IP: p.IP, Netns: w.Netns, PodNamespace: p.Namespace, PodName: p.Name,
				HostVeth: veth, Time: p.Time})
		}
		m.pods = append(m.pods, out)
	}
	if len(problems) > 0 {
		return m, fmt.Errorf("the checkpoint does not match this node; nothing was changed:\n  %s", strings.Join(problems, "\n  "))
	}
	for _, w := range wired {
		if !named[w.HostVeth] && (w.IP.IsValid() || w.IP6.IsValid()) {
			m.unlisted = append(m.unlisted, w)
		}
	}
	return m, nil
}

// addIPv6Pod plans an IPv6 pod into m; a problem is appended to problems.
func (m *migration) addIPv6Pod(p awsnode.Pod, veth string, byVeth map[string]netns.PodWiring, enis []cloud.ENIInfo, problems []string) []string {
	out, a, problem := planIPv6Pod(p, veth, byVeth, enis)
	if a != nil {
		m.adopt = append(m.adopt, *a)
	}
	m.pods = append(m.pods, out)
	if problem != "" {
		problems = append(problems, problem)
	}
	return problems
}

// planIPv6Pod is planMigration for a pod of the reference's IPv6 mode: its
// /128 must be the one its host veth routes and lie in a /80 (or be an
// address) EC2 lists on an attached ENI; its v4if0 address, found in the
// kernel, is adopted with it so no new pod is given it.
func planIPv6Pod(p awsnode.Pod, veth string, byVeth map[string]netns.PodWiring, enis []cloud.ENIInfo) (Pod, *store.Assignment, string) {
	out := Pod{Key: p.Key(), IP: p.IPv6.String(), HostVeth: veth, Pod: status.PodName(p.Namespace, p.Name)}
	w, wiredUp := byVeth[veth]
	eni := ipv6Owner(enis, p.IPv6)
	switch {
	case !wiredUp:
		out.Note = "host veth absent: the pod is gone; its address stays free (the reference prunes it too)"
		return out, nil, ""
	case w.IP6.IsValid() && w.IP6 != p.IPv6:
		return out, nil, fmt.Sprintf("%s (%s): its host veth %s routes %s, not %s", out.Pod, p.Key(), veth, w.IP6, p.IPv6)
	case eni == "":
		return out, nil, fmt.Sprintf("%s (%s, %s): EC2 does not list it in a /80 of this node's attached ENIs", p.IPv6, out.Pod, p.Key())
	}
	out.ENI, out.Netns, out.Adopted = eni, w.Netns, true
	if w.Netns == "" {
		out.Note = "its network namespace was not found: kept until the runtime's DEL"
	}
	a := &store.Assignment{ContainerID: p.ContainerID, IfName: p.IfName, Network: p.Network, IPv6: p.IPv6,
		Netns: w.Netns, PodNamespace: p.Namespace, PodName: p.Name, HostVeth: veth, Time: p.Time}
	if w.EgressIP.Is4() {
		a.EgressIP = w.EgressIP
	}
	return out, a, ""
}

// ipv6Owner is the attached ENI whose /80s (or IPv6 addresses) hold ip.
func ipv6Owner(enis []cloud.ENIInfo, ip netip.Addr) string {
	for _, e := range enis {
		if !e.Attached {
			continue
		}
		for _, p := range e.IPv6Prefixes {
			if p.Contains(ip) {
				return e.ID
			}
		}
		for _, a := range e.IPv6s {
			if a == ip {
				return e.ID
			}
		}
	}
	return ""
}

// primaryMark prefixes the owner of an ENI's primary address, which no pod
// may hold.
const primaryMark = "primary of "

// addressOwners maps every address on the node's attached ENIs to its ENI:
// secondary addresses and those in delegated prefixes.
func addressOwners(enis []cloud.ENIInfo) map[netip.Addr]string {
	out := map[netip.Addr]string{}
	for _, e := range enis {
		if !e.Attached {
			continue
		}
		out[e.PrimaryIP] = primaryMark + e.ID
		for _, a := range e.Secondary {
			out[a] = e.ID
		}
		for _, p := range e.Prefixes {
			for a := p.Masked().Addr(); p.Contains(a); a = a.Next() {
				out[a] = e.ID
			}
		}
	}
	return out
}

func notOnNode(owner string) string {
	if owner != "" {
		return ": it is the " + owner + " in EC2, not a pod address"
	}
	return ": EC2 does not list it on this node's attached ENIs"
}

// alreadyMigrated says whether the store already holds every assignment
// the migration would record, with the same addresses: a second run.
func alreadyMigrated(have []store.Assignment, m migration) bool {
	if len(have) == 0 {
		return false
	}
	type addrs struct{ v4, v6 netip.Addr }
	held := map[string]addrs{}
	for _, a := range have {
		held[a.Key] = addrs{a.IP, a.IPv6}
	}
	for _, a := range m.adopt {
		if h, ok := held[store.AssignmentKey(a.ContainerID, a.IfName)]; !ok || h != (addrs{a.IP, a.IPv6}) {
			return false
		}
	}
	return true
}

// sortedPods orders the output by address.
func sortedPods(pods []Pod) []Pod {
	sort.SliceStable(pods, func(i, j int) bool {
		a, _ := netip.ParseAddr(pods[i].IP)
		b, _ := netip.ParseAddr(pods[j].IP)
		return a.Less(b)
	})
	return pods
}
