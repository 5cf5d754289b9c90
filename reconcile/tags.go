package reconcile

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"vpc-cni/cloud"
)

// ADDITIONAL_ENI_TAGS: a new ENI carries them from its create
// (TagSpecification), and an ENI of ours created before the knob was set
// gets the missing ones with one CreateTags, when a pass has read EC2 (only
// EC2's answer shows tags; a pass at rest makes no call).

// createTags are the tags a new ENI is created with besides the ownership
// ones: the operator's and the intent's token.
func createTags(additional map[string]string, intent string) map[string]string {
	tags := maps.Clone(additional)
	if tags == nil {
		tags = map[string]string{}
	}
	tags[cloud.TagIntent] = intent
	return tags
}

// missingTags are the additional tags the ENI lacks or carries with another
// value; none for an ENI vpc-cni did not create for this node.
func missingTags(e cloud.ENIInfo, instanceID string, additional map[string]string) map[string]string {
	if !e.Attached || e.Tags[cloud.TagInstanceID] != instanceID {
		return nil
	}
	var out map[string]string
	for k, v := range additional {
		if have, ok := e.Tags[k]; !ok || have != v {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// addENITags gives our ENIs the additional tags they lack, one CreateTags
// per ENI; truth must be EC2's answer.
func (p *pass) addENITags(ctx context.Context, truth []cloud.ENIInfo) {
	if len(p.cfg.AdditionalENITags) == 0 || !strings.HasPrefix(p.rep.Observed, FromEC2) {
		return
	}
	for _, e := range truth {
		tags := missingTags(e, p.node.InstanceID, p.cfg.AdditionalENITags)
		if len(tags) == 0 {
			continue
		}
		p.rep.Calls = append(p.rep.Calls, "CreateTags")
		if err := p.Cloud.TagENI(ctx, e.ID, tags); err != nil {
			p.rep.Failed = append(p.rep.Failed, fmt.Sprintf("adding ADDITIONAL_ENI_TAGS to %s: %v", e.ID, err))
		}
	}
}
