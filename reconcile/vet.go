package reconcile

import (
	"errors"
	"fmt"
	"strings"

	"vpc-cni/cloud"
	"vpc-cni/store"
)

// IdentityError is an EC2 answer that contradicts what the store knows of
// the node: it lacks the node's primary ENI, or lists ENIs of another VPC.
// The same answer comes from a wrong region, another account's credentials
// or an endpoint that does not know the instance, and acting on it would
// drop every ENI and pod address of the node; so the pass stops, changing
// nothing, not even the state file.
type IdentityError struct{ Msg string }

func (e IdentityError) Error() string { return e.Msg }

// IsIdentityError reports whether err is an answer that contradicts the node.
func IsIdentityError(err error) bool {
	var ie IdentityError
	return errors.As(err, &ie)
}

// vetTruth checks EC2's list of the node's ENIs against the node's identity
// before anything acts on it. Pure.
func vetTruth(node store.Node, truth []cloud.ENIInfo) error {
	for _, t := range truth {
		if node.VPCID != "" && t.VPCID != "" && t.VPCID != node.VPCID {
			return identityError(node, fmt.Sprintf("EC2 lists ENI %s of VPC %s as attached to %s, which is in VPC %s",
				t.ID, t.VPCID, node.InstanceID, node.VPCID))
		}
	}
	primary, found := primaryOf(node, truth)
	switch {
	case !found:
		return identityError(node, fmt.Sprintf("EC2's list of the ENIs attached to %s (%s) lacks its primary ENI %s",
			node.InstanceID, Plural(len(truth), "ENI", "ENIs"), node.PrimaryENI))
	case !primary.Attached || primary.DeviceIndex != 0:
		return identityError(node, fmt.Sprintf("EC2 says the primary ENI %s of %s is at device %d, attachment %q",
			primary.ID, node.InstanceID, primary.DeviceIndex, primary.AttachmentStatus))
	case node.PrimaryMAC != "" && primary.MAC != "" && !strings.EqualFold(primary.MAC, node.PrimaryMAC):
		return identityError(node, fmt.Sprintf("EC2 says the primary ENI %s has MAC %s; the node learnt %s",
			primary.ID, primary.MAC, node.PrimaryMAC))
	}
	return nil
}

// primaryOf finds the node's primary ENI in the list: by ID when the node
// learnt it, else the ENI at device 0.
func primaryOf(node store.Node, truth []cloud.ENIInfo) (cloud.ENIInfo, bool) {
	for _, t := range truth {
		if (node.PrimaryENI != "" && t.ID == node.PrimaryENI) || (node.PrimaryENI == "" && t.DeviceIndex == 0) {
			return t, true
		}
	}
	return cloud.ENIInfo{}, false
}

func identityError(node store.Node, what string) error {
	return IdentityError{fmt.Sprintf("%s; the answer contradicts the node, so this pass changed nothing. Likely causes: "+
		"a wrong region (the node is in %s: check AWS_REGION and AWS_DEFAULT_REGION), another account's credentials "+
		"(AWS_PROFILE, AWS_ACCESS_KEY_ID), or an EC2 endpoint (AWS_ENDPOINT_URL_EC2) that does not know instance %s; "+
		"or a state dir copied from another node", what, orUnknown(node.Region), node.InstanceID)}
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown region"
	}
	return s
}
