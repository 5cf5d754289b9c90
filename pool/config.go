package pool

import (
	"errors"
	"fmt"
	"time"
)

// PrefixSize is the number of addresses in a delegated /28 prefix.
const PrefixSize = 16

// Modes reported in Figures.Mode.
const (
	ModeSecondaryIP = "secondary-ip"
	ModePrefix      = "prefix"
)

// Default values of the knobs that have one.
const (
	DefaultWarmENITarget = 1
	DefaultCooldown      = 30 * time.Second
	// DefaultReleaseDelay is how long excess must last before it goes back to
	// EC2. It is longer than the cooldown so pod churn does not flap the pool
	// (Cilium's ENI IPAM uses the same value for its excess-ip-release-delay).
	DefaultReleaseDelay = 3 * time.Minute
)

// Defaults returns the configuration with every knob at its default.
func Defaults() Config {
	return Config{
		WarmENITarget: DefaultWarmENITarget,
		Cooldown:      DefaultCooldown,
		ReleaseDelay:  DefaultReleaseDelay,
	}
}

// Validate rejects values the policy cannot act on. Each error names the
// variable, so the operator knows what to fix; nothing is replaced by a default.
func (c Config) Validate() error {
	var errs []error
	for _, k := range []struct {
		name string
		v    int
	}{
		{"WARM_ENI_TARGET", c.WarmENITarget},
		{"WARM_IP_TARGET", c.WarmIPTarget},
		{"MINIMUM_IP_TARGET", c.MinIPTarget},
		{"WARM_PREFIX_TARGET", c.WarmPrefixTarget},
		{"MAX_ENI", c.MaxENI},
		{"MAX_PODS", c.MaxPods},
		{"MAX_PODS_CAP", c.MaxPodsCap},
	} {
		if k.v < 0 {
			errs = append(errs, fmt.Errorf("%s: must not be negative, got %d", k.name, k.v))
		}
	}
	if c.Cooldown < 0 {
		errs = append(errs, fmt.Errorf("IP_COOLDOWN_PERIOD: must not be negative, got %s", c.Cooldown))
	}
	if c.AdaptiveWindow < 0 {
		errs = append(errs, fmt.Errorf("ADAPTIVE_GROWTH_WINDOW: must not be negative, got %s", c.AdaptiveWindow))
	}
	if c.ReleaseDelay <= c.Cooldown {
		errs = append(errs, fmt.Errorf("RELEASE_DELAY (%s) must be longer than IP_COOLDOWN_PERIOD (%s), so released addresses have finished cooling",
			c.ReleaseDelay, c.Cooldown))
	}
	return errors.Join(errs...)
}

// Validate rejects instance limits that leave no room for a pod address.
func (l Limits) Validate() error {
	if l.MaxENIs < 1 {
		return fmt.Errorf("instance limits: at least 1 ENI needed, got %d", l.MaxENIs)
	}
	if l.IPv4PerENI < 2 {
		return fmt.Errorf("instance limits: at least 2 IPv4 addresses per ENI needed, got %d", l.IPv4PerENI)
	}
	return nil
}

// EffectiveMaxENIs is min(MAX_ENI, the instance limit); MAX_ENI 0 means unset.
func EffectiveMaxENIs(l Limits, c Config) int {
	if c.MaxENI > 0 && c.MaxENI < l.MaxENIs {
		return c.MaxENI
	}
	return max(l.MaxENIs, 0)
}

// SlotsPerENI is how many secondary addresses or prefixes one ENI takes: its
// IPv4 limit less the primary address, which is never a pod address.
func SlotsPerENI(l Limits) int { return max(l.IPv4PerENI-1, 0) }

// MaxPods is the node's pod capacity (PodCapacity) with every card 0 ENI
// usable by pods.
func MaxPods(l Limits, c Config) int { return PodCapacity(l, c, 0).MaxPods }

// PodLimits returns the effective ENI limit, the slots per ENI (addresses in
// secondary-IP mode, prefixes in prefix mode) and max pods.
func PodLimits(l Limits, c Config) (maxENIs, perENI, maxPods int) {
	return EffectiveMaxENIs(l, c), SlotsPerENI(l), MaxPods(l, c)
}

// Usable reports whether a pod may be given a: it is Free, or Cooling and its
// cooldown has passed. The block must also not be Releasing.
func Usable(a Addr, now time.Time, cooldown time.Duration) bool {
	switch a.State {
	case Free:
		return true
	case Cooling:
		return now.Sub(a.Since) >= cooldown
	}
	return false
}

func ceilDiv(a, b int) int {
	if a <= 0 || b <= 0 {
		return 0
	}
	return (a + b - 1) / b
}
