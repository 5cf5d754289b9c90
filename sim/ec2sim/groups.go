package ec2sim

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// sgRec is one security group of the VPC. Its tags live in resTags, as the
// subnets' do, so CreateTags and DeleteTags reach them.
type sgRec struct {
	seq             int // creation order: the pagination order
	id, name, descr string
}

// AddSecurityGroup creates a security group in the node's VPC with name and
// tags, as CreateSecurityGroup with a TagSpecification does, and returns
// its ID. A name the VPC already has is refused, as EC2 refuses it.
//
// The emulator does not check that the groups CreateNetworkInterface or
// ModifyNetworkInterfaceAttribute name exist: tests give ENIs made-up IDs.
// DescribeSecurityGroups knows only the VPC's default group and these.
func (s *Sim) AddSecurityGroup(name string, tags map[string]string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ensureGroups()
	if name == "" || slices.ContainsFunc(s.groups, func(g *sgRec) bool { return g.name == name }) {
		return "", fmt.Errorf("ec2sim: InvalidGroup.Duplicate: the security group %q already exists in %s (or is empty)", name, s.vpcID)
	}
	var params []tagParam
	for k, v := range tags {
		params = append(params, tagParam{key: k, value: v, hasValue: true})
	}
	if err := checkTags(params, nil); err != nil {
		return "", fmt.Errorf("ec2sim: %v", err)
	}
	g := &sgRec{seq: len(s.groups), id: "sg-0" + s.ids.hex16(), name: name, descr: name}
	s.groups = append(s.groups, g)
	s.resTags[g.id] = maps.Clone(tags)
	if s.resTags[g.id] == nil {
		s.resTags[g.id] = map[string]string{}
	}
	return g.id, nil
}

// ensureGroups adds the VPC's default group (the primary ENI's) on first
// use. The caller holds s.mu.
func (s *Sim) ensureGroups() {
	if len(s.groups) == 0 {
		s.groups = []*sgRec{{seq: 0, id: s.sgID, name: "node", descr: "the node's security group"}}
	}
}

// groupOf is the security group with this ID, or nil. The caller holds s.mu.
func (s *Sim) groupOf(id string) *sgRec {
	s.ensureGroups()
	for _, g := range s.groups {
		if g.id == id {
			return g
		}
	}
	return nil
}

// nameOfGroup is a group's name for ENI answers and IMDS: its own when the
// VPC has it, else (a made-up ID) the ID. The caller holds s.mu.
func (s *Sim) nameOfGroup(id string) string {
	if g := s.groupOf(id); g != nil {
		return g.name
	}
	return id
}

type describeSGResp struct {
	respMeta
	Groups    []sgXML `xml:"securityGroupInfo>item"`
	NextToken string  `xml:"nextToken,omitempty"`
}

type sgXML struct {
	OwnerID          string   `xml:"ownerId"`
	GroupID          string   `xml:"groupId"`
	GroupName        string   `xml:"groupName"`
	GroupDescription string   `xml:"groupDescription"`
	VpcID            string   `xml:"vpcId"`
	SecurityGroupArn string   `xml:"securityGroupArn"`
	IPPermissions    struct{} `xml:"ipPermissions"`
	IPPermsEgress    struct{} `xml:"ipPermissionsEgress"`
	Tags             []tagXML `xml:"tagSet>item"`
}

// describeSecurityGroups answers DescribeSecurityGroups: GroupId.N and
// GroupName.N (each must exist), the filters below ANDed, values ORed with
// wildcards, and MaxResults (5..1000) with NextToken. EC2 pages it in
// creation order here; the rules (ipPermissions) are always empty.
func (s *Sim) describeSecurityGroups(f form) (response, *apiError) {
	const action = "DescribeSecurityGroups"
	s.ensureGroups()
	ids, names := f.list("GroupId"), f.list("GroupName")
	p, err := readPage(f, action, 5, 1000, false, "")
	if err != nil {
		return nil, err
	}
	if err := s.checkGroupRefs(ids, names); err != nil {
		return nil, err
	}
	filters := f.filters()
	for _, flt := range filters {
		if _, ok := s.groupFilterValues(s.groups[0])[flt.name]; !ok && !strings.HasPrefix(flt.name, "tag:") {
			return nil, errInvalidParameterValue("The filter '%s' is invalid", flt.name)
		}
	}
	var matched []*sgRec
	var positions []int
	for _, g := range s.groups {
		values := s.groupFilterValues(g)
		if (len(ids) == 0 || slices.Contains(ids, g.id)) && (len(names) == 0 || slices.Contains(names, g.name)) &&
			matchFilters(filters, func(name string) []string { return values[name] }) {
			matched = append(matched, g)
			positions = append(positions, g.seq)
		}
	}
	from, to, next := paginate(action, positions, p)
	resp := &describeSGResp{NextToken: next}
	for _, g := range matched[from:to] {
		resp.Groups = append(resp.Groups, sgXML{OwnerID: s.ownerID, GroupID: g.id, GroupName: g.name,
			GroupDescription: g.descr, VpcID: s.vpcID, Tags: tagsXML(s.resTags[g.id]),
			SecurityGroupArn: fmt.Sprintf("arn:aws:ec2:%s:%s:security-group/%s", s.cfg.Region, s.ownerID, g.id)})
	}
	return resp, nil
}

// checkGroupRefs refuses a malformed or unknown GroupId and an unknown
// GroupName, as EC2 does (the whole call fails).
func (s *Sim) checkGroupRefs(ids, names []string) *apiError {
	for _, id := range ids {
		if !isResourceID(id, "sg-") {
			return newAPIError("InvalidGroupId.Malformed", "Invalid id: \"%s\" (expecting \"sg-...\")", id)
		}
		if s.groupOf(id) == nil {
			return newAPIError("InvalidGroup.NotFound", "The security group '%s' does not exist", id)
		}
	}
	for _, n := range names {
		if !slices.ContainsFunc(s.groups, func(g *sgRec) bool { return g.name == n }) {
			return newAPIError("InvalidGroup.NotFound", "The security group '%s' does not exist in VPC '%s'", n, s.vpcID)
		}
	}
	return nil
}

func (s *Sim) groupFilterValues(g *sgRec) map[string][]string {
	v := map[string][]string{
		"group-id":    one(g.id),
		"group-name":  one(g.name),
		"description": one(g.descr),
		"vpc-id":      one(s.vpcID),
		"owner-id":    one(s.ownerID),
		"tag-key":     {},
	}
	for k, val := range s.resTags[g.id] {
		v["tag:"+k] = one(val)
		v["tag-key"] = append(v["tag-key"], k)
	}
	return v
}
