package settings

import (
	"strings"
	"testing"
	"time"
)

func envOf(kv map[string]string) Lookup {
	return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
}

func intp(n int) *int { return &n }

func TestDefaultsWhenNothingIsSet(t *testing.T) {
	e, err := Resolve(envOf(nil), Overrides{}, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if e.Pool.WarmENITarget != 1 || e.Pool.WarmIPTarget != 0 || e.Pool.Cooldown != 30*time.Second || e.MTU != 9001 {
		t.Fatalf("defaults: %+v mtu %d", e.Pool, e.MTU)
	}
	if e.Pool.ReleaseDelay <= e.Pool.Cooldown {
		t.Fatalf("release delay %v must exceed cooldown %v", e.Pool.ReleaseDelay, e.Pool.Cooldown)
	}
	if got := e.Source(WarmENITarget); got != FromDefault {
		t.Fatalf("source = %q", got)
	}
}

func TestPrecedenceFlagOverStoreOverEnv(t *testing.T) {
	env := envOf(map[string]string{WarmIPTarget: "3", MinIPTarget: "7", WarmENITarget: "2"})
	stored := Overrides{WarmIP: intp(4), MinIP: intp(8)}
	flags := Overrides{WarmIP: intp(5)}
	e, err := Resolve(env, stored, flags)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name string
		got  int
		want int
		src  Source
	}{
		{WarmIPTarget, e.Pool.WarmIPTarget, 5, FromFlag},
		{MinIPTarget, e.Pool.MinIPTarget, 8, FromStore},
		{WarmENITarget, e.Pool.WarmENITarget, 2, FromEnv},
		{WarmPrefixTarget, e.Pool.WarmPrefixTarget, 0, FromDefault},
	}
	for _, c := range checks {
		if c.got != c.want || e.Source(c.name) != c.src {
			t.Errorf("%s = %d from %s, want %d from %s", c.name, c.got, e.Source(c.name), c.want, c.src)
		}
	}
}

func TestBadValuesNameTheVariable(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{WarmIPTarget: "abc"}, "WARM_IP_TARGET"},
		{map[string]string{WarmIPTarget: "-1"}, "WARM_IP_TARGET"},
		{map[string]string{MinIPTarget: "1.5"}, "MINIMUM_IP_TARGET"},
		{map[string]string{PrefixDelegation: "maybe"}, "ENABLE_PREFIX_DELEGATION"},
		{map[string]string{Cooldown: "-5"}, "IP_COOLDOWN_PERIOD"},
		{map[string]string{ENIMTU: "100"}, "AWS_VPC_ENI_MTU"},
		{map[string]string{Cooldown: "120", ReleaseDelay: "60"}, "RELEASE_DELAY"},
	}
	for _, c := range cases {
		_, err := Resolve(envOf(c.env), Overrides{}, Overrides{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want one naming %s", c.env, err, c.want)
		}
	}
}

func TestCooldownAcceptsSecondsAndDurations(t *testing.T) {
	for text, want := range map[string]time.Duration{"0": 0, "45": 45 * time.Second, "1m": time.Minute} {
		e, err := Resolve(envOf(map[string]string{Cooldown: text}), Overrides{}, Overrides{})
		if err != nil || e.Pool.Cooldown != want {
			t.Errorf("%q: %v %v", text, e.Pool.Cooldown, err)
		}
	}
}

func TestEC2BudgetsFromTheEnvironment(t *testing.T) {
	d, m, err := EC2Budgets(envOf(map[string]string{EC2DescribeRate: "5"}))
	if err != nil || d != (Budget{Rate: 5, Burst: 50}) || m != (Budget{}) {
		t.Fatalf("describe %+v mutating %+v err %v", d, m, err)
	}
	for _, bad := range []string{"fast", "0", "-1", "5000"} {
		if _, _, err := EC2Budgets(envOf(map[string]string{EC2MutatingRate: bad})); err == nil || !strings.Contains(err.Error(), EC2MutatingRate) {
			t.Errorf("%q: err = %v, want one naming %s", bad, err, EC2MutatingRate)
		}
	}
}

func TestAdaptiveGrowthWindow(t *testing.T) {
	for _, c := range []struct {
		text string
		want time.Duration
		bad  bool
	}{{"", 0, false}, {"60", time.Minute, false}, {"90s", 90 * time.Second, false}, {"-1", 0, true}, {"soon", 0, true}} {
		env := func(k string) (string, bool) { return c.text, k == AdaptiveGrowthWindow }
		e, err := Resolve(env, Overrides{}, Overrides{})
		if (err != nil) != c.bad || e.Pool.AdaptiveWindow != c.want {
			t.Errorf("%s=%q: window %s, err %v; want %s, error %v", AdaptiveGrowthWindow, c.text, e.Pool.AdaptiveWindow, err, c.want, c.bad)
		}
	}
}
