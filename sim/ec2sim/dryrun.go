package ec2sim

import "strings"

// dryRun answers a DryRun=true request as EC2 does once the caller is
// authorized (admit has already refused a denied action): the resources the
// request names must exist, since IAM evaluates the request against them,
// and then DryRunOperation (HTTP 412) instead of doing anything.
func (s *Sim) dryRun(action string, f form) *apiError {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dryRuns[action]++
	if err := s.dryRunRefs(f); err != nil {
		return err
	}
	return newAPIError("DryRunOperation", "Request would have succeeded, but DryRun flag is set.")
}

// dryRunRefs checks every resource ID the request names.
func (s *Sim) dryRunRefs(f form) *apiError {
	if f.has("NetworkInterfaceId") {
		if _, err := s.eniParam(f); err != nil {
			return err
		}
	}
	for _, id := range append(f.list("ResourceId"), f.list("NetworkInterfaceId")...) {
		if strings.HasPrefix(id, "eni-") && s.enis[id] == nil {
			return errENINotFound(id)
		}
	}
	for _, id := range append(f.list("SubnetId"), f.get("SubnetId")) {
		if id != "" && s.poolOf(id) == nil {
			return newAPIError("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", id)
		}
	}
	for _, id := range append(f.list("InstanceId"), f.get("InstanceId")) {
		if id != "" && id != s.cfg.InstanceID {
			return newAPIError("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
		}
	}
	for _, key := range []string{"AttachmentId", "Attachment.AttachmentId"} {
		if id := f.get(key); id != "" && !s.attachmentExists(id) {
			return newAPIError("InvalidAttachmentID.NotFound", "The attachment ID '%s' does not exist", id)
		}
	}
	return s.checkGroupRefs(append(f.list("SecurityGroupId"), f.list("GroupId")...), nil)
}

func (s *Sim) attachmentExists(id string) bool {
	for _, e := range s.enis {
		if e.attach != nil && e.attach.id == id {
			return true
		}
	}
	return false
}
