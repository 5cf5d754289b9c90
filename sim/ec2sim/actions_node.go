package ec2sim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// DescribeInstances, DescribeInstanceTypes and DescribeSubnets: the node's
// one instance, the type table and the one subnet.

func (s *Sim) describeInstances(f form) (response, *apiError) {
	ids := f.list("InstanceId")
	if _, err := readPage(f, "DescribeInstances", 5, 1000, len(ids) > 0, "instanceIds"); err != nil {
		return nil, err
	}
	for _, id := range ids {
		if id != s.cfg.InstanceID {
			return nil, newAPIError("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
		}
	}
	filters := f.filters()
	values := func(name string) []string { return s.instanceFilterValues(name) }
	for _, flt := range filters {
		if values(flt.name) == nil && !strings.HasPrefix(flt.name, "tag") {
			return nil, errInvalidParameterValue("The filter '%s' is invalid", flt.name)
		}
	}
	resp := &describeInstancesResp{}
	if matchFilters(filters, values) {
		resp.Reservations = []reservationXML{{ReservationID: s.reservationID, OwnerID: s.ownerID,
			Instances: []instanceXML{s.instanceXML()}}}
	}
	return resp, nil
}

func (s *Sim) instanceFilterValues(name string) []string {
	if key, ok := cutTagFilter(name); ok {
		if v, has := s.resTags[s.cfg.InstanceID][key]; has {
			return one(v)
		}
		return []string{}
	}
	switch name {
	case "instance-id":
		return one(s.cfg.InstanceID)
	case "instance-type":
		return one(s.cfg.InstanceType)
	case "availability-zone":
		return one(s.cfg.AZ)
	case "vpc-id":
		return one(s.vpcID)
	case "subnet-id":
		return one(s.subnetID)
	case "instance-state-name":
		return one("running")
	case "private-ip-address":
		return one(s.primaryENI().primary.String())
	case "tag-key":
		keys := []string{}
		for k := range s.resTags[s.cfg.InstanceID] {
			keys = append(keys, k)
		}
		return keys
	}
	return nil
}

func (s *Sim) instanceXML() instanceXML {
	primary := s.primaryENI()
	inst := instanceXML{InstanceID: s.cfg.InstanceID, ImageID: s.imageID, State: stateXML{Code: 16, Name: "running"},
		PrivateDNSName: s.dnsName(primary.primary), InstanceType: s.cfg.InstanceType,
		LaunchTime: ec2Time(s.launchTime), Placement: placementXML{AvailabilityZone: s.cfg.AZ, Tenancy: "default"},
		SubnetID: s.subnetID, VpcID: s.vpcID, PrivateIPAddress: primary.primary.String(), SourceDestCheck: true,
		Groups: []groupXML{{GroupID: s.sgID, GroupName: "node"}}, Architecture: "x86_64",
		Hypervisor: hypervisorOf(s.typ), Tags: tagsXML(s.resTags[s.cfg.InstanceID])}
	for _, e := range s.attachedENIs() {
		inst.NetworkInterfaces = append(inst.NetworkInterfaces, s.eniXML(e))
	}
	return inst
}

// hypervisorOf: DescribeInstances says "xen" for Nitro too (EC2 does), while
// DescribeInstanceTypes says "nitro".
func hypervisorOf(t typeInfo) string {
	if t.Hypervisor == "nitro" || t.Hypervisor == "" {
		return "xen"
	}
	return t.Hypervisor
}

func (s *Sim) describeInstanceTypes(f form) (response, *apiError) {
	table, tErr := instanceTypes()
	if tErr != nil {
		return nil, newAPIError("InternalError", "%v", tErr)
	}
	names := f.list("InstanceType")
	p, err := readPage(f, "DescribeInstanceTypes", 5, 100, false, "")
	if err != nil {
		return nil, err
	}
	if len(names) > 0 {
		var unknown []string
		for _, n := range names {
			if _, ok := table[n]; !ok {
				unknown = append(unknown, n)
			}
		}
		if len(unknown) > 0 {
			return nil, newAPIError("InvalidInstanceType",
				"The following supplied instance types do not exist: [%s]", strings.Join(unknown, ", "))
		}
	} else {
		names = sortedTypeNames(table)
		if p.max == 0 {
			p.max = 100
		}
	}
	return s.instanceTypesPage(table, names, f.filters(), p)
}

func (s *Sim) instanceTypesPage(table map[string]typeInfo, names []string, filters []filter, p page) (response, *apiError) {
	var matched []typeInfo
	var positions []int
	for i, n := range names {
		t := table[n]
		values, known := typeFilterValues(t)
		for _, flt := range filters {
			if _, ok := known[flt.name]; !ok {
				return nil, errInvalidParameterValue("The filter '%s' is invalid", flt.name)
			}
		}
		if matchFilters(filters, func(name string) []string { return values[name] }) {
			matched = append(matched, t)
			positions = append(positions, i)
		}
	}
	from, to, next := paginate("DescribeInstanceTypes", positions, p)
	resp := &describeInstanceTypesResp{NextToken: next}
	for _, t := range matched[from:to] {
		resp.InstanceTypes = append(resp.InstanceTypes, instanceTypeInfoXML(t))
	}
	return resp, nil
}

func typeFilterValues(t typeInfo) (map[string][]string, map[string]bool) {
	v := map[string][]string{
		"instance-type": one(t.Name),
		"hypervisor":    one(t.Hypervisor),
		"bare-metal":    one(strconv.FormatBool(t.BareMetal)),
		"network-info.maximum-network-interfaces":   one(strconv.Itoa(t.total())),
		"network-info.ipv4-addresses-per-interface": one(strconv.Itoa(t.IPv4PerENI)),
	}
	known := map[string]bool{}
	for k := range v {
		known[k] = true
	}
	return v, known
}

func instanceTypeInfoXML(t typeInfo) instanceTypeXML {
	ni := networkInfoXML{MaximumNetworkInterfaces: t.total(), MaximumNetworkCards: t.NetworkCards,
		Ipv4AddressesPerInterface: t.IPv4PerENI, Ipv6AddressesPerInterface: t.IPv4PerENI, Ipv6Supported: true,
		EnaSupport: "required"}
	for c := 0; c < t.NetworkCards; c++ {
		ni.NetworkCards = append(ni.NetworkCards, networkCardXML{NetworkCardIndex: c,
			MaximumNetworkInterfaces: t.MaxENIs})
	}
	return instanceTypeXML{InstanceType: t.Name, CurrentGeneration: true, BareMetal: t.BareMetal,
		Hypervisor: t.Hypervisor, NetworkInfo: ni}
}

func (s *Sim) describeSubnets(f form) (response, *apiError) {
	ids := f.list("SubnetId")
	if _, err := readPage(f, "DescribeSubnets", 5, 1000, len(ids) > 0, "subnetIds"); err != nil {
		return nil, err
	}
	for _, id := range ids {
		if s.poolOf(id) == nil {
			return nil, newAPIError("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", id)
		}
	}
	for _, flt := range f.filters() {
		if _, ok := s.subnetFilterValues(s.subnets[0])[flt.name]; !ok && !strings.HasPrefix(flt.name, "tag:") {
			return nil, errInvalidParameterValue("The filter '%s' is invalid", flt.name)
		}
	}
	resp := &describeSubnetsResp{}
	for _, sub := range s.subnets {
		values := s.subnetFilterValues(sub)
		if (len(ids) == 0 || slices.Contains(ids, sub.id)) &&
			matchFilters(f.filters(), func(name string) []string { return values[name] }) {
			resp.Subnets = append(resp.Subnets, s.subnetXML(sub))
		}
	}
	return resp, nil
}

func (s *Sim) subnetFilterValues(sub *subnetPool) map[string][]string {
	v := map[string][]string{
		"subnet-id":         one(sub.id),
		"vpc-id":            one(s.vpcID),
		"availability-zone": one(sub.az),
		"cidr-block":        one(sub.cidr.String()),
		"state":             one("available"),
		"default-for-az":    one("false"),
		"owner-id":          one(s.ownerID),
		"tag-key":           {},
	}
	for k, val := range s.resTags[sub.id] {
		v["tag:"+k] = one(val)
		v["tag-key"] = append(v["tag-key"], k)
	}
	return v
}

func (s *Sim) subnetXML(sub *subnetPool) subnetXML {
	return subnetXML{SubnetID: sub.id, State: "available", OwnerID: s.ownerID, VpcID: s.vpcID,
		SubnetArn: fmt.Sprintf("arn:aws:ec2:%s:%s:subnet/%s", s.cfg.Region, s.ownerID, sub.id),
		CidrBlock: sub.cidr.String(), AvailableIPAddressCount: sub.free,
		AvailabilityZone: sub.az, Tags: tagsXML(s.resTags[sub.id]), Ipv6CidrBlocks: s.subnetIPv6(sub.id)}
}
