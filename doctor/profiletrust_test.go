package doctor

import (
	"strings"
	"testing"

	"vpc-cni/settings"
	"vpc-cni/status"
)

// A profile any pod may pick is a warning naming it and both ways to bind
// it; a bound profile names its namespaces.
func TestDoctorWarnsWhenAnyPodMayPickAProfile(t *testing.T) {
	gold := status.ProfileStatus{Profile: settings.Profile{Name: "gold"}, Configured: true, AnyPod: true}
	blue := status.ProfileStatus{Profile: settings.Profile{Name: "blue", Namespaces: []string{"web", "api"}}, Configured: true}
	cases := []struct {
		profiles []status.ProfileStatus
		want     []string
		not      string
	}{
		{[]status.ProfileStatus{blue, gold}, []string{"warning: any pod may pick the network profile gold", "PROFILE_<NAME>_NAMESPACES", "VPC_CNI_PROFILE_ADMISSION=true"}, "blue"},
		{[]status.ProfileStatus{blue}, []string{"bound to namespaces on the node: blue: web,api"}, "warning"},
		{nil, []string{"no profile configured"}, "warning"},
	}
	for _, c := range cases {
		f := checkProfileTrust(status.PoolStatus{Profiles: c.profiles})
		if !f.OK || f.Check != "profile trust" {
			t.Errorf("%+v: a warning, not a fault", f)
		}
		for _, w := range c.want {
			if !strings.Contains(f.Detail, w) {
				t.Errorf("%q lacks %q", f.Detail, w)
			}
		}
		if strings.Contains(f.Detail, c.not) {
			t.Errorf("%q names %q", f.Detail, c.not)
		}
	}
}
