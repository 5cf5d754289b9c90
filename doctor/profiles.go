package doctor

import (
	"fmt"
	"strings"

	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/status"
)

// checkProfiles reports the network profiles' pools: an ENI whose security
// groups are not its profile's (it gets no new pods) is a fault, as is a
// profile pool that cannot give its next pod an address for a reason other
// than load; a full profile pool is load, as a full default pool is.
func checkProfiles(s status.PoolStatus) Finding {
	if len(s.Profiles) == 0 {
		return Finding{"network profiles", true, "none configured"}
	}
	var drift, unknown, each []string
	for _, e := range s.ENIs {
		if strings.HasPrefix(e.GroupsDrift, reconcile.ProfileUnknown) {
			unknown = append(unknown, e.ID+": "+strings.TrimPrefix(e.GroupsDrift, reconcile.ProfileUnknown))
			continue
		}
		if e.GroupsDrift != "" {
			drift = append(drift, fmt.Sprintf("%s of profile %s: %s", e.ID, e.Profile, e.GroupsDrift))
		}
	}
	for _, p := range s.Profiles {
		state := fmt.Sprintf("%s: %d ENI(s), %d free", p.Name, len(p.ENIs), p.Figures.Free)
		switch {
		case !p.Configured:
			state += " (no longer configured: giving back what its pods do not hold)"
		case p.Full != nil && p.Full.Full:
			state += fmt.Sprintf(" (full, %s: %s)", p.Full.Limit, p.Full.Message())
		}
		each = append(each, state)
	}
	if len(unknown) > 0 {
		return Finding{"network profiles", false, "ENIs whose pool IMDS cannot tell, no new pods there: " +
			strings.Join(unknown, "; ") + "; let one pass read EC2 (" + settings.IMDSOnlyMode + "=false) to read their " +
			settings.ProfileTag + " tags, or give the profiles groups that tell them apart"}
	}
	if len(drift) > 0 {
		return Finding{"network profiles", false, "security groups changed outside vpc-cni, no new pods there: " +
			strings.Join(drift, "; ") + "; restore the groups, or let the pool replace the ENI once its pods are gone"}
	}
	return Finding{"network profiles", true, strings.Join(each, "; ")}
}

// checkProfileTrust warns when any pod may pick a profile: no namespace
// binds it on the node and no admission policy is declared. A warning,
// not a fault: the node serves pods either way, and the cluster may trust
// every namespace.
func checkProfileTrust(s status.PoolStatus) Finding {
	var open, bound []string
	for _, p := range s.Profiles {
		switch {
		case p.AnyPod:
			open = append(open, string(p.Name))
		case len(p.Namespaces) > 0:
			bound = append(bound, string(p.Name)+": "+strings.Join(p.Namespaces, ","))
		}
	}
	if len(open) > 0 {
		return Finding{"profile trust", true, "warning: " + settings.OpenProfilesWarning(open)}
	}
	if len(bound) > 0 {
		return Finding{"profile trust", true, "bound to namespaces on the node: " + strings.Join(bound, "; ")}
	}
	if len(s.Profiles) == 0 {
		return Finding{"profile trust", true, "no profile configured"}
	}
	return Finding{"profile trust", true, "no profile is open to any pod (" + settings.ProfileAdmission + "=true: an admission policy decides)"}
}
