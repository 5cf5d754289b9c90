package reconcile

import (
	"encoding/json"
	"time"

	"vpc-cni/internal/printers"
	"vpc-cni/pool"
	"vpc-cni/settings"
)

// MarshalJSON gives `reconcile -o json` the conventions of `pool status`:
// camelCase keys, durations as strings ("1.2s"), lists never null, unset
// times left out (plan.excessSince when nothing is in excess).
func (r Report) MarshalJSON() ([]byte, error) {
	type plan struct {
		Actions     []pool.Action `json:"actions"`
		Figures     pool.Figures  `json:"figures"`
		ExcessSince *time.Time    `json:"excessSince,omitempty"`
	}
	// config: the effective knobs, the resync interval as a duration string
	// (the outer field hides the embedded one of the same name).
	type config struct {
		settings.Effective
		EC2Resync printers.Duration `json:"ec2ResyncInterval"`
	}
	v := struct {
		Time     time.Time         `json:"time"`
		Duration printers.Duration `json:"duration"`
		DryRun   bool              `json:"dryRun"`
		Plan     plan              `json:"plan"`
		Calls    []string          `json:"calls"`
		Findings []Finding         `json:"findings"`
		Failed   []string          `json:"failed"`
		Config   config            `json:"config"`
		Changed  []settings.Change `json:"changedSinceLastPass"`
		IPv6     *IPv6Report       `json:"ipv6,omitempty"`
		Profiles []pool.Plan       `json:"profiles"`
	}{
		Time: r.Time, Duration: printers.Duration(r.Duration), DryRun: r.DryRun,
		Plan:  plan{Actions: orEmpty(r.Plan.Actions), Figures: r.Plan.Figures},
		Calls: orEmpty(r.Calls), Findings: orEmpty(r.Findings), Failed: orEmpty(r.Failed),
		Config: config{r.Config, printers.Duration(r.Config.EC2Resync)}, Changed: orEmpty(r.Changed),
		IPv6: r.IPv6, Profiles: orEmpty(r.Profiles),
	}
	if !r.Plan.ExcessSince.IsZero() {
		v.Plan.ExcessSince = &r.Plan.ExcessSince
	}
	v.Config.Values = orEmpty(v.Config.Values)
	return json.Marshal(v)
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
