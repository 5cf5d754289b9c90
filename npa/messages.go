package npa

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// EnforceRequest is rpc.EnforceNpRequest: the pod whose host veth the agent
// attaches its programs to, in the node's mode.
type EnforceRequest struct {
	PodName        string // K8S_POD_NAME = 1
	PodNamespace   string // K8S_POD_NAMESPACE = 2
	Mode           string // NETWORK_POLICY_MODE = 3
	InterfaceCount int32  // InterfaceCount = 4
}

func (r EnforceRequest) marshal() []byte {
	b := appendString(nil, 1, r.PodName)
	b = appendString(b, 2, r.PodNamespace)
	b = appendString(b, 3, r.Mode)
	if r.InterfaceCount != 0 {
		b = protowire.AppendTag(b, 4, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(r.InterfaceCount))
	}
	return b
}

// DeleteRequest is rpc.DeleteNpRequest.
type DeleteRequest struct {
	PodName      string // K8S_POD_NAME = 1
	PodNamespace string // K8S_POD_NAMESPACE = 2
}

func (r DeleteRequest) marshal() []byte {
	return appendString(appendString(nil, 1, r.PodName), 2, r.PodNamespace)
}

// ConfigReply is rpc.NetworkPolicyAgentConfigReply, as ipamd of aws-cni
// v1.23.1 fills it.
type ConfigReply struct {
	Mode            string // NetworkPolicyMode = 1
	MultiNICEnabled bool   // MultiNICEnabled = 2
	NodeIPv4        string // NodeIPv4 = 3 (IPv4 clusters)
	NodeIPv6        string // NodeIPv6 = 4 (IPv6 clusters)
	InstanceID      string // InstanceID = 5
	Region          string // Region = 6
}

func (r ConfigReply) marshal() []byte {
	b := appendString(nil, 1, r.Mode)
	if r.MultiNICEnabled {
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		b = protowire.AppendVarint(b, 1)
	}
	b = appendString(b, 3, r.NodeIPv4)
	b = appendString(b, 4, r.NodeIPv6)
	b = appendString(b, 5, r.InstanceID)
	return appendString(b, 6, r.Region)
}

// appendString appends a proto3 string field (omitted when empty).
func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// success reads field 1 (bool Success) of EnforceNpReply and DeleteNpReply,
// skipping any field a newer agent adds.
func success(b []byte) (bool, error) {
	ok := false
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false, fmt.Errorf("malformed reply: %v", protowire.ParseError(n))
		}
		b = b[n:]
		if num == 1 && typ == protowire.VarintType {
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return false, fmt.Errorf("malformed reply: %v", protowire.ParseError(m))
			}
			ok, b = v != 0, b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return false, fmt.Errorf("malformed reply: %v", protowire.ParseError(m))
		}
		b = b[m:]
	}
	return ok, nil
}
