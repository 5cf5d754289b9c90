package doctor

import (
	"strings"
	"testing"

	"vpc-cni/pool"
	"vpc-cni/settings"
	"vpc-cni/status"
)

func TestDoctorReportsADriftedProfileENIAsAFault(t *testing.T) {
	s := status.PoolStatus{Profiles: []status.ProfileStatus{{Profile: settings.Profile{Name: "gold"}, Configured: true,
		ENIs: []string{"eni-1"}, Figures: pool.Figures{Free: 3}}}}
	if f := checkProfiles(s); !f.OK || !strings.Contains(f.Detail, "gold: 1 ENI(s), 3 free") {
		t.Fatalf("healthy: %+v", f)
	}
	s.ENIs = []status.ENIStatus{{ID: "eni-1", Profile: "gold", GroupsDrift: "its groups are [sg-x], profile gold's are [sg-g]"}}
	if f := checkProfiles(s); f.OK || !strings.Contains(f.Detail, "eni-1 of profile gold") {
		t.Fatalf("drifted: %+v", f)
	}
	if f := checkProfiles(status.PoolStatus{}); !f.OK || f.Detail != "none configured" {
		t.Fatalf("no profiles: %+v", f)
	}
}
