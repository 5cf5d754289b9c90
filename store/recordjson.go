package store

import (
	"vpc-cni/internal/jsonfields"
	"vpc-cni/settings"
)

// The node and the assignments are read or written by every ADD and DEL;
// their JSON goes key by key (jsonfields) rather than through encoding/json's
// reflection over their fields, which a one-call process pays in full. The
// struct tags stay the record's definition: recordjson_test.go holds these
// codecs to encoding/json's bytes for every field.

// UnmarshalJSON decodes a node record.
func (n *Node) UnmarshalJSON(data []byte) error {
	return jsonfields.Decode(data, map[string]any{
		"instanceId": &n.InstanceID, "instanceType": &n.InstanceType, "region": &n.Region, "az": &n.AZ,
		"vpcId": &n.VPCID, "vpcCidrs": &n.VPCCIDRs, "subnetId": &n.SubnetID, "subnetCidr": &n.SubnetCIDR,
		"primaryEni": &n.PrimaryENI, "primaryMac": &n.PrimaryMAC, "primaryIp": &n.PrimaryIP,
		"securityGroups": &n.SecurityGroups, "limits": jsonfields.Fields{"MaxENIs": &n.Limits.MaxENIs,
			"IPv4PerENI": &n.Limits.IPv4PerENI, "VCPUs": &n.Limits.VCPUs}, "hypervisor": &n.Hypervisor,
		"learnedAt": &n.LearnedAt, "primaryIpv6": &n.PrimaryIPv6, "confirmedBoot": &n.ConfirmedBoot,
		"prefixCapable": &n.PrefixCapable,
	})
}

// UnmarshalJSON decodes an assignment record.
func (a *Assignment) UnmarshalJSON(data []byte) error {
	return jsonfields.Decode(data, map[string]any{
		"key": &a.Key, "containerId": &a.ContainerID, "ifName": &a.IfName, "network": &a.Network,
		"ip": &a.IP, "ipv6": &a.IPv6, "egressIp": &a.EgressIP, "eniId": &a.ENIID, "deviceIndex": &a.DeviceIndex,
		"netns": &a.Netns, "podNamespace": &a.PodNamespace, "podName": &a.PodName, "podUid": &a.PodUID,
		"hostVeth": &a.HostVeth, "time": &a.Time, "profile": &a.Profile,
	})
}

// MarshalJSON encodes an assignment record as encoding/json encodes its
// fields, in their order, with their tags' omitempty and omitzero.
func (a Assignment) MarshalJSON() ([]byte, error) {
	var o jsonfields.Object
	o.String("key", a.Key, false)
	o.String("containerId", a.ContainerID, false)
	o.String("ifName", a.IfName, false)
	o.String("network", a.Network, true)
	err := firstErr(o.Text("ip", a.IP, false), o.Text("ipv6", a.IPv6, !a.IPv6.IsValid()),
		o.Text("egressIp", a.EgressIP, !a.EgressIP.IsValid()))
	o.String("eniId", a.ENIID, false)
	o.Int("deviceIndex", a.DeviceIndex, false)
	for _, f := range []struct{ key, v string }{{"netns", a.Netns}, {"podNamespace", a.PodNamespace},
		{"podName", a.PodName}, {"podUid", a.PodUID}, {"hostVeth", a.HostVeth}} {
		o.String(f.key, f.v, true)
	}
	err = firstErr(err, o.Time("time", a.Time))
	o.String("profile", string(a.Profile), true)
	return o.Bytes(), err
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// overridesFields are the keys of the overrides `vpcctl pool warm` stores,
// read by every ADD.
func overridesFields(o *settings.Overrides) map[string]any {
	return map[string]any{"warmIpTarget": &o.WarmIP, "minimumIpTarget": &o.MinIP, "warmEniTarget": &o.WarmENI,
		"warmPrefixTarget": &o.WarmPrefix}
}
