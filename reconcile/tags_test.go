package reconcile

import (
	"strings"
	"testing"
	"time"

	"vpc-cni/cloud"
)

// ADDITIONAL_ENI_TAGS: ENIs created before the knob get its tags with one
// CreateTags each when a pass reads EC2; a pass at rest and a pass that finds
// them tagged make none; a new ENI has them from its create. The primary ENI,
// not vpc-cni's, is never tagged.
func TestAdditionalENITagsReachOurENIs(t *testing.T) {
	n := newNode(t, "m5.large", env{"WARM_IP_TARGET": "12"})
	n.converge(5)
	n.env["ADDITIONAL_ENI_TAGS"] = `{"team":"net","cost":"42"}`
	n.sim.ResetCounters()
	n.pass() // at rest: IMDS agrees, so no EC2 read and no tag call
	if c := n.sim.Counters()["CreateTags"]; c != 0 {
		t.Fatalf("a pass at rest made %d CreateTags", c)
	}
	n.clock.Advance(time.Hour) // past the safety-net interval: EC2 is read
	rep := n.pass()
	if !strings.HasPrefix(rep.Observed, FromEC2) {
		t.Fatalf("observed %q; want an EC2 read", rep.Observed)
	}
	ours := 0
	for _, e := range n.sim.State().ENIs {
		if e.Tags[cloud.TagInstanceID] == "" {
			if e.Tags["team"] != "" {
				t.Errorf("%s (not vpc-cni's) was tagged: %v", e.ID, e.Tags)
			}
			continue
		}
		ours++
		if e.Tags["team"] != "net" || e.Tags["cost"] != "42" {
			t.Errorf("%s lacks the additional tags: %v", e.ID, e.Tags)
		}
	}
	if c := n.sim.Counters()["CreateTags"]; ours == 0 || c != ours {
		t.Fatalf("%d CreateTags for %d ENIs of ours; want one each", c, ours)
	}
	n.clock.Advance(time.Hour)
	n.pass()
	if c := n.sim.Counters()["CreateTags"]; c != ours {
		t.Fatalf("a second EC2 read made %d more CreateTags; the tags were there", c-ours)
	}
	for range 12 {
		if _, err := n.addPod(); err != nil {
			t.Fatal(err)
		}
	}
	n.converge(5)
	st := n.sim.State()
	last := st.ENIs[len(st.ENIs)-1]
	if len(st.ENIs) <= ours+1 || last.Tags["team"] != "net" {
		t.Fatalf("the new ENI %s has tags %v; want the additional ones from its create", last.ID, last.Tags)
	}
	if c := n.sim.Counters()["CreateTags"]; c != ours {
		t.Errorf("%d CreateTags after growth; the create carried the tags", c-ours)
	}
}
