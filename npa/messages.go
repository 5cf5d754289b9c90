package npa

import "fmt"

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
		b = appendVarint(b, 4, uint64(r.InterfaceCount))
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
		b = appendVarint(b, 2, 1)
	}
	b = appendString(b, 3, r.NodeIPv4)
	b = appendString(b, 4, r.NodeIPv6)
	b = appendString(b, 5, r.InstanceID)
	return appendString(b, 6, r.Region)
}

// success reads field 1 (bool Success) of EnforceNpReply and DeleteNpReply,
// skipping any field a newer agent adds.
func success(b []byte) (bool, error) {
	ok := false
	for len(b) > 0 {
		num, typ, n, err := consumeTag(b)
		if err != nil {
			return false, fmt.Errorf("malformed reply: %v", err)
		}
		b = b[n:]
		m, err := fieldLen(typ, b)
		if err != nil {
			return false, fmt.Errorf("malformed reply: field %d: %v", num, err)
		}
		if num == 1 && typ == wireVarint {
			v, _ := consumeVarint(b)
			ok = v != 0
		}
		b = b[m:]
	}
	return ok, nil
}
