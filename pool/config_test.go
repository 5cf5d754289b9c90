package pool

import (
	"strings"
	"testing"
	"time"
)

func TestValidateNamesTheBadVariable(t *testing.T) {
	cases := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"negative WARM_ENI_TARGET", func(c *Config) { c.WarmENITarget = -1 }, "WARM_ENI_TARGET"},
		{"negative WARM_IP_TARGET", func(c *Config) { c.WarmIPTarget = -1 }, "WARM_IP_TARGET"},
		{"negative MINIMUM_IP_TARGET", func(c *Config) { c.MinIPTarget = -3 }, "MINIMUM_IP_TARGET"},
		{"negative WARM_PREFIX_TARGET", func(c *Config) { c.WarmPrefixTarget = -1 }, "WARM_PREFIX_TARGET"},
		{"negative MAX_ENI", func(c *Config) { c.MaxENI = -1 }, "MAX_ENI"},
		{"negative max pods", func(c *Config) { c.MaxPods = -1 }, "MAX_PODS"},
		{"negative cooldown", func(c *Config) { c.Cooldown = -time.Second }, "IP_COOLDOWN_PERIOD"},
		{"release delay equal to the cooldown", func(c *Config) { c.ReleaseDelay = c.Cooldown }, "RELEASE_DELAY"},
		{"release delay shorter than the cooldown", func(c *Config) { c.ReleaseDelay = time.Second }, "RELEASE_DELAY"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Defaults()
			tc.change(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v; want an error naming %s", err, tc.want)
			}
		})
	}
}

func TestValidateAcceptsDefaultsAndZeros(t *testing.T) {
	c := Defaults()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	c.WarmENITarget, c.Cooldown, c.ReleaseDelay = 0, 0, time.Second
	if err := c.Validate(); err != nil {
		t.Fatalf("zero targets and no cooldown: %v", err)
	}
}

func TestLimitsValidate(t *testing.T) {
	for _, l := range []Limits{{MaxENIs: 0, IPv4PerENI: 4}, {MaxENIs: 3, IPv4PerENI: 1}, {MaxENIs: -1, IPv4PerENI: 50}} {
		if l.Validate() == nil {
			t.Errorf("%+v accepted", l)
		}
	}
	if err := t3small.Validate(); err != nil {
		t.Errorf("t3.small: %v", err)
	}
}

func TestPodLimits(t *testing.T) {
	cases := []struct {
		name                     string
		lim                      Limits
		cfg                      Config
		maxENIs, perENI, maxPods int
	}{
		{"t3.small", t3small, Config{}, 3, 3, 11},
		{"p3dn.24xlarge", p3dn24xl, Config{}, 15, 49, 737},
		{"p3dn.24xlarge with prefixes, vCPUs unknown", p3dn24xl, Config{PrefixDelegation: true}, 15, 49, 110},
		{"MAX_ENI below the instance limit", p3dn24xl, Config{MaxENI: 4}, 4, 49, 4*49 + 2},
		{"MAX_ENI above the instance limit", t3small, Config{MaxENI: 8}, 3, 3, 11},
		{"max pods set above what the addresses hold", t3small, Config{MaxPods: 110}, 3, 3, 11},
		{"max pods set below", t3small, Config{MaxPods: 8}, 3, 3, 8},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, p, m := PodLimits(tc.lim, tc.cfg)
			if e != tc.maxENIs || p != tc.perENI || m != tc.maxPods {
				t.Fatalf("got %d %d %d; want %d %d %d", e, p, m, tc.maxENIs, tc.perENI, tc.maxPods)
			}
		})
	}
}
