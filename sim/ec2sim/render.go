package ec2sim

import (
	"net/netip"
	"slices"
	"strings"
	"time"
)

// Rendering of the emulator's records as EC2 XML shapes. Callers hold s.mu.

func (s *Sim) eniXML(e *eniRec) niXML {
	ni := niXML{NetworkInterfaceID: e.id, SubnetID: e.subnetID, VpcID: s.vpcID, AvailabilityZone: s.cfg.AZ,
		Description: e.description, OwnerID: s.ownerID, Status: e.status(), MacAddress: e.mac,
		SourceDestCheck: e.sourceDestCheck, InterfaceType: e.ifType, Tags: tagsXML(e.tags)}
	if e.primary.IsValid() { // an efa-only ENI has none
		ni.PrivateIPAddress, ni.PrivateDNSName = e.primary.String(), s.dnsName(e.primary)
	}
	for _, g := range e.groups {
		ni.Groups = append(ni.Groups, groupXML{GroupID: g, GroupName: s.nameOfGroup(g)})
	}
	if a := e.attach; a != nil {
		ni.Attachment = &niAttachXML{AttachmentID: a.id, InstanceID: a.instanceID, InstanceOwnerID: s.ownerID,
			DeviceIndex: a.deviceIndex, NetworkCardIndex: a.cardIndex, Status: "attached",
			AttachTime: ec2Time(s.attachTime(a)), DeleteOnTermination: a.deleteOnTermination}
	}
	for i, a := range e.allAddrs() {
		primary := i == 0
		ni.PrivateIPs = append(ni.PrivateIPs, privateIPXML{PrivateIPAddress: a.String(),
			PrivateDNSName: s.dnsName(a), Primary: &primary})
	}
	for _, p := range e.prefixList() {
		ni.Prefixes = append(ni.Prefixes, prefixXML{Ipv4Prefix: p.String()})
	}
	s.renderIPv6(&ni, e)
	return ni
}

// attachTime: the primary ENI's zero time reads as the launch time.
func (s *Sim) attachTime(a *attachment) time.Time {
	if a.at.IsZero() {
		return s.launchTime
	}
	return a.at
}

func (s *Sim) dnsName(a netip.Addr) string {
	return "ip-" + strings.ReplaceAll(a.String(), ".", "-") + "." + s.cfg.Region + ".compute.internal"
}

func tagsXML(tags map[string]string) []tagXML {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]tagXML, 0, len(keys))
	for _, k := range keys {
		out = append(out, tagXML{Key: k, Value: tags[k]})
	}
	return out
}

// enisInOrder lists ENIs in creation order (the pagination order).
func (s *Sim) enisInOrder() []*eniRec {
	out := make([]*eniRec, 0, len(s.enis))
	for _, e := range s.enis {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b *eniRec) int { return a.seq - b.seq })
	return out
}

// attachedENIs lists this instance's ENIs by device index.
func (s *Sim) attachedENIs() []*eniRec {
	var out []*eniRec
	for _, e := range s.enis {
		if e.attach != nil {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b *eniRec) int { return a.attach.deviceIndex - b.attach.deviceIndex })
	return out
}

func (s *Sim) primaryENI() *eniRec {
	for _, e := range s.enis {
		if e.attach != nil && e.attach.deviceIndex == 0 && e.attach.cardIndex == 0 {
			return e
		}
	}
	return nil
}
