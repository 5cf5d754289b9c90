package settings

import "fmt"

// The IP family knobs, aws-node's names and meanings.
const (
	// EnableIPv6: pods get a /128 from the primary ENI's delegated /80.
	EnableIPv6 = "ENABLE_IPv6"
	// EnableIPv4: pods get a VPC IPv4 (false with EnableIPv6: IPv6 only).
	EnableIPv4 = "ENABLE_IPv4"
	// EnableV4Egress: IPv6-only pods reach IPv4 through v4if0 (SNAT).
	EnableV4Egress = "ENABLE_V4_EGRESS"
	// EnableV6Egress: IPv4-only pods reach IPv6 through v6if0 (SNAT).
	EnableV6Egress = "ENABLE_V6_EGRESS"
)

// MinIPv6MTU is IPv6's minimum link MTU (RFC 8200); the kernel turns IPv6
// off on a link below it.
const MinIPv6MTU = 1280

// families resolves the IP family knobs into e.Pool and refuses the
// combinations vpc-cni cannot serve, naming the knob (after the MTUs and
// custom networking are resolved). Whether the instance can hold a /80 is
// the pass's check: it needs the instance type.
func (r *resolver) families(e *Effective) error {
	var err error
	for _, b := range []struct {
		dst  *bool
		name string
	}{
		{&e.Pool.IPv6, EnableIPv6},
		{new(bool), EnableIPv4},
		{&e.Pool.V4Egress, EnableV4Egress},
		{&e.Pool.V6Egress, EnableV6Egress},
	} {
		if *b.dst, err = r.boolean(b.name, knob(b.name).Default == "true"); err != nil {
			return err
		}
		if b.name == EnableIPv4 {
			e.Pool.IPv4Off = !*b.dst
		}
	}
	return r.checkFamilies(e)
}

func (r *resolver) checkFamilies(e *Effective) error {
	c := e.Pool
	knob := func(name string) string { return fmt.Sprintf("%s=%s (%s)", name, r.valueOf(name), r.origin(name)) }
	switch {
	case !c.IPv6 && c.IPv4Off:
		return fmt.Errorf("%s and %s: pods would get no address; enable at least one family", knob(EnableIPv4), knob(EnableIPv6))
	case !c.IPv6:
		return nil
	case c.IPv6Only() && !c.PrefixDelegation:
		return fmt.Errorf("%s with %s needs %s=true (pods take /128s from a delegated /80), got %s",
			knob(EnableIPv6), knob(EnableIPv4), PrefixDelegation, knob(PrefixDelegation))
	case c.CustomNetworking:
		return fmt.Errorf("%s cannot be used with custom networking, %s: the /80 lives on the primary ENI", knob(EnableIPv6), knob(CustomNetworkCfg))
	case e.MTU < MinIPv6MTU:
		return fmt.Errorf("%s needs %s of at least %d (IPv6's minimum), got %s", knob(EnableIPv6), ENIMTU, MinIPv6MTU, knob(ENIMTU))
	case e.PodMTU < MinIPv6MTU:
		return fmt.Errorf("%s needs %s of at least %d (IPv6's minimum), got %s", knob(EnableIPv6), PodMTU, MinIPv6MTU, knob(PodMTU))
	}
	return nil
}

// valueOf is the resolved text of a knob already resolved ("" if none).
func (r *resolver) valueOf(name string) string {
	for _, v := range r.values {
		if v.Name == name {
			return v.Value
		}
	}
	return ""
}
