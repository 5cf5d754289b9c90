package status

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"vpc-cni/internal/printers"
	"vpc-cni/pool"
	"vpc-cni/settings"
)

// profilesStatus is every profile pool: its configuration, figures, what
// the next pass would do for it and whether a pod of it would get an address.
func profilesStatus(ss storedState, cfg settings.Effective, pools []pool.Config, plans []pool.Plan, now time.Time) []ProfileStatus {
	out := []ProfileStatus{}
	growth := cfg.NoProvisioning() == ""
	open := cfg.OpenProfiles()
	for i, c := range pools {
		p, ok := cfg.Profile(c.Profile)
		if !ok {
			p = settings.Profile{Name: c.Profile, Pool: c}
		}
		ps := ProfileStatus{Profile: p, Configured: ok, Figures: plans[i].Figures, Pending: []pool.Action{}, ENIs: []string{},
			AnyPod: ok && slices.Contains(open, p.Name)}
		if growth {
			ps.Pending = append(ps.Pending, plans[i].Actions...)
		}
		if t := pool.TimersOf(ss.snap, p.Name); now.Before(t.GrowBlockedUntil) {
			ps.GrowBlocked = fmt.Sprintf("until %s: %s", t.GrowBlockedUntil.Format(time.RFC3339), t.GrowBlockedWhy)
		}
		if ok {
			full := pool.Judge(ss.node.Limits, c, ss.snap, now, ss.waiting[p.Name], cfg.NoProvisioning())
			ps.Full = &full
		}
		for _, e := range ss.snap.ENIs {
			if e.Profile == p.Name {
				ps.ENIs = append(ps.ENIs, e.ID)
			}
		}
		out = append(out, ps)
	}
	return out
}

// profileRows: one row per profile pool in the table.
func profileRows(t *printers.Table, ps []ProfileStatus) {
	for _, p := range ps {
		f := p.Figures
		where := strings.Join(append(append([]string{}, p.Subnets...), tagSelectors(p.SubnetTags)...), ",")
		conf := fmt.Sprintf("groups %s, subnets %s, SNAT %s", printers.FirstOf(strings.Join(p.SecurityGroups, ","), "the primary ENI's"),
			printers.FirstOf(where, "the node's"), p.SNAT)
		switch {
		case !p.Configured:
			conf = "no longer configured: its pods keep their addresses, the rest goes back"
		case !p.Allowed:
			conf += "; not in PROFILES: no new pods"
		case len(p.Namespaces) > 0:
			conf += "; for namespaces " + strings.Join(p.Namespaces, ",")
		}
		t.Row("PROFILE "+string(p.Name), conf)
		if p.AnyPod {
			t.Row("", fmt.Sprintf("any pod may pick it: no %s and no admission policy (%s)",
				settings.ProfileKey(string(p.Name), settings.ProfileNamespaces), settings.ProfileAdmission))
		}
		t.Row("", fmt.Sprintf("%s: %s on %d free, %d cooling, %d assigned (%d held); shortfall %d, excess %d%s",
			f.Policy, printers.Plural(len(p.ENIs), "ENI", "ENIs"), f.Free, f.Cooling, f.Assigned, f.Total, f.Shortfall, f.Excess, waitingNote(f.Waiting)))
		for _, a := range p.Pending {
			t.Row("", "next reconcile: "+DescribeAction(a))
		}
		if p.GrowBlocked != "" {
			t.Row("", "growth blocked "+p.GrowBlocked)
		}
		if p.Full != nil && p.Full.Full {
			t.Row("", "full: "+p.Full.Message())
		}
	}
}

func tagSelectors(tags map[string]string) []string {
	var out []string
	for k, v := range tags {
		out = append(out, "tag:"+k+"="+v)
	}
	return out
}
