package ec2sim

import (
	"strconv"
	"sync"
)

type describeNIResp struct {
	respMeta
	NetworkInterfaces []niXML `xml:"networkInterfaceSet>item"`
	NextToken         string  `xml:"nextToken,omitempty"`
}

func (s *Sim) describeNetworkInterfaces(f form) (response, *apiError) {
	ids := f.list("NetworkInterfaceId")
	p, err := readPage(f, "DescribeNetworkInterfaces", 5, 1000, len(ids) > 0, "NetworkInterfaceIds")
	if err != nil {
		return nil, err
	}
	wanted, err := s.lookupENIs(ids)
	if err != nil {
		return nil, err
	}
	filters := f.filters()
	if err := checkFilters(filters, eniFilterValues); err != nil {
		return nil, err
	}
	var matched []*eniRec
	var positions []int
	for _, e := range s.enisInOrder() {
		if (wanted == nil || wanted[e.id]) && matchFilters(filters, func(name string) []string {
			v, _ := eniFilterValues(s, e, name)
			return v
		}) {
			matched = append(matched, e)
			positions = append(positions, e.seq)
		}
	}
	from, to, next := paginate("DescribeNetworkInterfaces", positions, p)
	resp := &describeNIResp{NextToken: next}
	for _, e := range matched[from:to] {
		resp.NetworkInterfaces = append(resp.NetworkInterfaces, s.eniXML(e))
	}
	return resp, nil
}

// lookupENIs checks ids (malformed, missing) and returns them as a set, or nil
// when no ids were given.
func (s *Sim) lookupENIs(ids []string) (map[string]bool, *apiError) {
	if len(ids) == 0 {
		return nil, nil
	}
	set := map[string]bool{}
	for _, id := range ids {
		if !isResourceID(id, "eni-") {
			return nil, newAPIError("InvalidNetworkInterfaceId.Malformed", "Invalid id: \"%s\" (expecting \"eni-...\")", id)
		}
		if s.enis[id] == nil {
			return nil, errENINotFound(id)
		}
		set[id] = true
	}
	return set, nil
}

type valuesFunc func(s *Sim, e *eniRec, name string) ([]string, bool)

func checkFilters(filters []filter, known valuesFunc) *apiError {
	for _, flt := range filters {
		if _, ok := known(nil, nil, flt.name); !ok {
			return errInvalidParameterValue("The filter '%s' is invalid", flt.name)
		}
	}
	return nil
}

// matchFilters ANDs the filters; values reports the record's values for a name.
func matchFilters(filters []filter, values func(name string) []string) bool {
	for _, flt := range filters {
		if !matchAny(flt.values, values(flt.name)...) {
			return false
		}
	}
	return true
}

// eniFilterValues gives an ENI's values for a DescribeNetworkInterfaces filter
// name; ok is false for an unknown name. With e == nil it only checks the name.
func eniFilterValues(s *Sim, e *eniRec, name string) ([]string, bool) {
	if key, ok := cutTagFilter(name); ok {
		if e == nil {
			return nil, true
		}
		if v, has := e.tags[key]; has {
			return []string{v}, true
		}
		return nil, true
	}
	get, ok := eniFilterFields()[name]
	if !ok || e == nil {
		return nil, ok
	}
	return get(s, e), true
}

func cutTagFilter(name string) (string, bool) {
	if len(name) > 4 && name[:4] == "tag:" {
		return name[4:], true
	}
	return "", false
}

func one(v string) []string { return []string{v} }

func attachField(get func(a *attachment) string) func(*Sim, *eniRec) []string {
	return func(_ *Sim, e *eniRec) []string {
		if e.attach == nil {
			return nil
		}
		return one(get(e.attach))
	}
}

// eniFilterFields is built on first use (see actions).
var eniFilterFields = sync.OnceValue(func() map[string]func(s *Sim, e *eniRec) []string {
	return map[string]func(s *Sim, e *eniRec) []string{
		"attachment.instance-id":   attachField(func(a *attachment) string { return a.instanceID }),
		"attachment.attachment-id": attachField(func(a *attachment) string { return a.id }),
		"attachment.device-index":  attachField(func(a *attachment) string { return strconv.Itoa(a.deviceIndex) }),
		"attachment.status":        attachField(func(*attachment) string { return "attached" }),
		"attachment.delete-on-termination": attachField(func(a *attachment) string {
			return strconv.FormatBool(a.deleteOnTermination)
		}),
		"attachment.instance-owner-id": func(s *Sim, e *eniRec) []string {
			return attachField(func(*attachment) string { return s.ownerID })(s, e)
		},
		"availability-zone":            func(s *Sim, _ *eniRec) []string { return one(s.cfg.AZ) },
		"description":                  func(_ *Sim, e *eniRec) []string { return one(e.description) },
		"group-id":                     func(_ *Sim, e *eniRec) []string { return e.groups },
		"interface-type":               func(_ *Sim, e *eniRec) []string { return one(e.ifType) },
		"mac-address":                  func(_ *Sim, e *eniRec) []string { return one(e.mac) },
		"network-interface-id":         func(_ *Sim, e *eniRec) []string { return one(e.id) },
		"owner-id":                     func(s *Sim, _ *eniRec) []string { return one(s.ownerID) },
		"private-ip-address":           eniAddrStrings,
		"addresses.private-ip-address": eniAddrStrings,
		"ipv4-prefix": func(_ *Sim, e *eniRec) []string {
			var out []string
			for _, p := range e.prefixList() {
				out = append(out, p.String())
			}
			return out
		},
		"requester-managed": func(*Sim, *eniRec) []string { return one("false") },
		"source-dest-check": func(_ *Sim, e *eniRec) []string { return one(strconv.FormatBool(e.sourceDestCheck)) },
		"status":            func(_ *Sim, e *eniRec) []string { return one(e.status()) },
		"subnet-id":         func(_ *Sim, e *eniRec) []string { return one(e.subnetID) },
		"vpc-id":            func(s *Sim, _ *eniRec) []string { return one(s.vpcID) },
		"tag-key": func(_ *Sim, e *eniRec) []string {
			var out []string
			for k := range e.tags {
				out = append(out, k)
			}
			return out
		},
	}
})

func eniAddrStrings(_ *Sim, e *eniRec) []string {
	var out []string
	for _, a := range e.allAddrs() {
		out = append(out, a.String())
	}
	return out
}
