package settings

import (
	"fmt"
	"strings"
)

// Where new ENIs go: the reference's knob names.
const (
	SubnetDiscovery  = "ENABLE_SUBNET_DISCOVERY"
	CustomNetworkCfg = "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG"
	// ENIConfigPrefix starts the per-zone keys of custom networking:
	// ENI_CONFIG_<ZONE> with the zone upper-cased and '-' as '_'
	// (ENI_CONFIG_US_WEST_2A), the reference's ENIConfig as one line.
	ENIConfigPrefix = "ENI_CONFIG_"
)

// Subnet discovery modes (ENABLE_SUBNET_DISCOVERY). Unset, new ENIs use the
// node's subnet until it runs out of addresses, then the tagged subnets;
// true chooses among all of them every time, as the reference does; false
// never leaves the node's subnet.
const (
	DiscoveryWhenFull = "when-full"
	DiscoveryAlways   = "true"
	DiscoveryNever    = "false"
)

// discovery resolves ENABLE_SUBNET_DISCOVERY.
func (r *resolver) discovery() (string, error) {
	text, v, ok := r.raw(SubnetDiscovery)
	if !ok {
		r.note(v, DiscoveryWhenFull)
		return DiscoveryWhenFull, nil
	}
	switch strings.ToLower(text) {
	case DiscoveryWhenFull:
		r.note(v, DiscoveryWhenFull)
		return DiscoveryWhenFull, nil
	case "true", "1":
		r.note(v, DiscoveryAlways)
		return DiscoveryAlways, nil
	case "false", "0":
		r.note(v, DiscoveryNever)
		return DiscoveryNever, nil
	}
	return "", bad(v, text, "must be "+orList(knob(SubnetDiscovery).Allowed))
}

// ENIConfig is where custom networking puts a zone's new ENIs: the fields of
// the reference's ENIConfig resource.
type ENIConfig struct {
	Key            string   `json:"key"` // ENI_CONFIG_<ZONE>
	Subnet         string   `json:"subnet"`
	SecurityGroups []string `json:"securityGroups,omitempty"` // empty: the primary ENI's groups
	Origin         string   `json:"origin"`
}

// ENIConfigKey is the key that configures the zone az.
func ENIConfigKey(az string) string {
	return ENIConfigPrefix + strings.ToUpper(strings.ReplaceAll(az, "-", "_"))
}

// ENIConfigFor reads the zone's custom networking line:
//
//	ENI_CONFIG_US_WEST_2A=subnet=subnet-0abc,securityGroups=sg-1;sg-2
//
// ok is false when the zone has none. A line that is not of that form is an
// error naming the key and where it was set.
func ENIConfigFor(in Inputs, az string) (c ENIConfig, ok bool, err error) {
	key := ENIConfigKey(az)
	text, v, ok := in.Lookup(key)
	if !ok {
		return c, false, nil
	}
	c, err = parseENIConfig(text)
	c.Key, c.Origin = key, v.Origin()
	if err != nil {
		return c, false, bad(v, text, err.Error())
	}
	return c, true, nil
}

func parseENIConfig(text string) (ENIConfig, error) {
	var c ENIConfig
	for _, field := range strings.Split(text, ",") {
		k, val, found := strings.Cut(strings.TrimSpace(field), "=")
		val = strings.TrimSpace(val)
		if !found {
			return c, fmt.Errorf("%q is not field=value (fields: subnet, securityGroups)", field)
		}
		switch strings.TrimSpace(k) {
		case "subnet":
			if !strings.HasPrefix(val, "subnet-") {
				return c, fmt.Errorf("subnet %q is not a subnet ID (subnet-...)", val)
			}
			c.Subnet = val
		case "securityGroups":
			for _, g := range strings.Split(val, ";") {
				if g = strings.TrimSpace(g); !strings.HasPrefix(g, "sg-") {
					return c, fmt.Errorf("security group %q is not a group ID (sg-...)", g)
				}
				c.SecurityGroups = append(c.SecurityGroups, strings.TrimSpace(g))
			}
		default:
			return c, fmt.Errorf("unknown field %q (fields: subnet, securityGroups)", k)
		}
	}
	if c.Subnet == "" {
		return c, fmt.Errorf("no subnet (subnet=subnet-...)")
	}
	return c, nil
}
