package ec2sim

import "strings"

const maxTagsPerResource = 50

func (s *Sim) createTags(f form) (response, *apiError) {
	tags := f.tags("Tag")
	if len(tags) == 0 {
		return nil, newAPIError("MissingParameter", "The request must contain the parameter tag")
	}
	targets, err := s.tagTargets(f.list("ResourceId"))
	if err != nil {
		return nil, err
	}
	for _, t := range targets {
		if err := checkTags(tags, t); err != nil {
			return nil, err
		}
	}
	for _, t := range targets {
		for _, tag := range tags {
			t[tag.key] = tag.value
		}
	}
	return okReturn(), nil
}

func (s *Sim) deleteTags(f form) (response, *apiError) {
	targets, err := s.tagTargets(f.list("ResourceId"))
	if err != nil {
		return nil, err
	}
	tags := f.tags("Tag")
	for _, t := range targets {
		if len(tags) == 0 { // no tags named: delete them all
			clear(t)
		}
		for _, tag := range tags {
			if v, ok := t[tag.key]; ok && (!tag.hasValue || v == tag.value) {
				delete(t, tag.key)
			}
		}
	}
	return okReturn(), nil
}

// tagTargets resolves ResourceId.N to the tag maps to change: ENIs, the
// instance, the subnets, the VPC and its security groups.
func (s *Sim) tagTargets(ids []string) ([]map[string]string, *apiError) {
	if len(ids) == 0 {
		return nil, newAPIError("MissingParameter", "The request must contain the parameter resourceIdSet")
	}
	var out []map[string]string
	for _, id := range ids {
		switch {
		case strings.HasPrefix(id, "eni-"):
			e := s.enis[id]
			if e == nil {
				return nil, errENINotFound(id)
			}
			out = append(out, e.tags)
		case id == s.cfg.InstanceID || s.poolOf(id) != nil || id == s.vpcID || s.groupOf(id) != nil:
			if s.resTags[id] == nil {
				s.resTags[id] = map[string]string{}
			}
			out = append(out, s.resTags[id])
		default:
			return nil, newAPIError("InvalidID", "The ID '%s' is not valid", id)
		}
	}
	return out, nil
}

// checkTags validates keys and the 50-tag limit on the union of the
// resource's existing tags and the new ones.
func checkTags(tags []tagParam, existing map[string]string) *apiError {
	keys := make(map[string]bool, len(existing)+len(tags))
	for k := range existing {
		keys[k] = true
	}
	for _, t := range tags {
		switch {
		case t.key == "":
			return errInvalidParameterValue("Tag keys must not be empty")
		case strings.HasPrefix(strings.ToLower(t.key), "aws:"):
			return newAPIError("InvalidTagKey.Malformed", "Tag keys starting with 'aws:' are reserved for internal use")
		case len(t.key) > 128 || len(t.value) > 256:
			return errInvalidParameterValue("Tag key or value too long: '%s'", t.key)
		}
		keys[t.key] = true
	}
	if len(keys) > maxTagsPerResource {
		return newAPIError("TagLimitExceeded", "The maximum number of tags per resource (%d) was exceeded", maxTagsPerResource)
	}
	return nil
}
