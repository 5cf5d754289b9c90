package settings

import (
	"slices"
	"strings"
	"testing"

	"vpc-cni/pool"
)

func TestParseProfileKeyFindsTheNameAndTheWholeField(t *testing.T) {
	cases := []struct{ key, name, field string }{
		{"PROFILE_GOLD_SECURITY_GROUPS", "gold", ProfileSecurityGroups},
		{"PROFILE_PCI_DSS_SUBNETS", "pci-dss", ProfileSubnets},
		{"PROFILE_A_SNAT", "a", ProfileSNAT},
		{"PROFILE_X1_WARM_IP_TARGET", "x1", ProfileWarmIPTarget},
		{"PROFILE_X_MINIMUM_IP_TARGET", "x", ProfileMinIPTarget},
		{"PROFILE_WARM_WARM_PREFIX_TARGET", "warm", ProfileWarmPrefixTarget},
		{"PROFILE_EGRESS_SNAT_SNAT", "egress-snat", ProfileSNAT},
	}
	for _, c := range cases {
		name, field, err := ParseProfileKey(c.key)
		if err != nil || name != c.name || field != c.field {
			t.Errorf("%s: %q %q %v, want %q %q", c.key, name, field, err, c.name, c.field)
		}
		if got := ProfileKey(c.name, c.field); got != c.key {
			t.Errorf("ProfileKey(%q, %q) = %s, want %s", c.name, c.field, got, c.key)
		}
	}
	for _, bad := range []string{"PROFILE_GOLD_GROUPS", "PROFILE__SNAT", "PROFILE_gold_SNAT", "PROFILE_G-OLD_SNAT", "PROFILE_SNAT"} {
		if _, _, err := ParseProfileKey(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s: %v, want an error naming the key", bad, err)
		}
	}
}

func TestProfilesResolveFromTheFileAndTheEnvironment(t *testing.T) {
	file := fileOf(t, "PROFILE_GOLD_SECURITY_GROUPS=sg-1, sg-2\nPROFILE_GOLD_SUBNETS=subnet-a,tag:tier=gold\n"+
		"PROFILE_GOLD_SNAT=none\nPROFILE_GOLD_WARM_IP_TARGET=3\nWARM_ENI_TARGET=2\n")
	env := map[string]string{"PROFILE_BLUE_SECURITY_GROUPS": "sg-9", "PROFILE_GOLD_MINIMUM_IP_TARGET": "5", "PROFILE_HOME": "/x"}
	in := Inputs{Env: envOf(env), File: file, Names: func() []string { return sortedKeys(env) }}
	e, err := Resolve(Overrides{}, in)
	if err != nil {
		t.Fatal(err)
	}
	if names := profileNamesOf(e); !slices.Equal(names, []string{"blue", "gold"}) {
		t.Fatalf("profiles %v, want blue and gold", names)
	}
	gold, _ := e.Profile("gold")
	if !slices.Equal(gold.SecurityGroups, []string{"sg-1", "sg-2"}) || !slices.Equal(gold.Subnets, []string{"subnet-a"}) ||
		gold.SubnetTags["tier"] != "gold" || gold.SNAT != SNATNone || !gold.Allowed {
		t.Fatalf("gold: %+v", gold)
	}
	// gold sets targets of its own: exactly those, the others at their defaults.
	if c := gold.Pool; c.Profile != "gold" || c.WarmIPTarget != 3 || c.MinIPTarget != 5 || c.WarmENITarget != 1 {
		t.Fatalf("gold's pool: %+v", c)
	}
	// blue sets none: the node's.
	blue, _ := e.Profile("blue")
	if c := blue.Pool; c.Profile != "blue" || c.WarmENITarget != 2 || c.WarmIPTarget != 0 || blue.SNAT != SNATNode {
		t.Fatalf("blue's pool: %+v snat %s", c, blue.SNAT)
	}
	if v := e.Value("PROFILE_GOLD_MINIMUM_IP_TARGET"); v.Source != FromEnv || v.Value != "5" {
		t.Fatalf("gold's MINIMUM_IP_TARGET: %+v", v)
	}
	if v := e.Value("PROFILE_GOLD_SNAT"); v.Source != FromFile || !strings.Contains(v.Where, ":3") {
		t.Fatalf("gold's SNAT: %+v", v)
	}
	if got := e.PoolConfigs(); len(got) != 3 || got[0].Profile != "" || got[1].Profile != "blue" || got[2].Profile != "gold" {
		t.Fatalf("pool configs %+v", got)
	}
}

func sortedKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func profileNamesOf(e Effective) []string {
	var out []string
	for _, p := range e.Profiles {
		out = append(out, string(p.Name))
	}
	return out
}

func TestNoProfileLeavesTheDefaultPoolAsItWas(t *testing.T) {
	e, err := Resolve(Overrides{}, Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Profiles) != 0 || len(e.PoolConfigs()) != 1 || e.PoolConfigs()[0] != e.Pool || e.Pool.Profile != "" {
		t.Fatalf("profiles %+v, pools %+v", e.Profiles, e.PoolConfigs())
	}
}

func TestABadProfileValueNamesTheKeyAndWhereItWasSet(t *testing.T) {
	cases := []struct{ line, want string }{
		{"PROFILE_GOLD_SECURITY_GROUPS=sg-1,web", `PROFILE_GOLD_SECURITY_GROUPS="sg-1,web" (file /etc/vpc-cni/config:1): "web" is neither a security group ID (sg-...) nor a tag selector`},
		{"PROFILE_GOLD_SECURITY_GROUPS=sg-1,tag:team", `PROFILE_GOLD_SECURITY_GROUPS="sg-1,tag:team" (file /etc/vpc-cni/config:1): "tag:team": a tag selector is tag:<key>=<value> (security groups of the node's VPC tagged so)`},
		{"PROFILE_GOLD_SECURITY_GROUPS=tag:=payments", `"tag:=payments": a tag selector is tag:<key>=<value>`},
		{"PROFILE_GOLD_SECURITY_GROUPS=team=payments", `"team=payments" is neither a security group ID (sg-...) nor a tag selector`},
		{"PROFILE_GOLD_SECURITY_GROUPS=sg-1,sg-1,sg-2,sg-3,sg-4,sg-5,sg-6,sg-7,sg-8,sg-9,sg-a,sg-b,sg-c,sg-d,sg-e,sg-f,sg-10,sg-11",
			"17 security groups; an ENI has at most 16"},
		{"PROFILE_GOLD_SUBNETS=subnet-1,net-2", `"net-2" is neither a subnet ID`},
		{"PROFILE_GOLD_SUBNETS=tag:tier", "tag:<key>=<value>"},
		{"PROFILE_GOLD_SNAT=nat", `PROFILE_GOLD_SNAT="nat" (file /etc/vpc-cni/config:1): must be node or none`},
		{"PROFILE_GOLD_WARM_IP_TARGET=-1", "PROFILE_GOLD_WARM_IP_TARGET"},
		{"PROFILE_GOLD_WARM_ENI_TARGET=many", "not an integer"},
		{"PROFILE_GOLD_SNAT=none\nPROFILES=gold,blue", `PROFILES="gold,blue" (file /etc/vpc-cni/config:2): profile "blue" is not configured`},
	}
	for _, c := range cases {
		_, err := Resolve(Overrides{}, Inputs{File: fileOf(t, c.line)})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.line, err, c.want)
		}
	}
	env := map[string]string{"PROFILE_gold_SNAT": "none"}
	_, err := Resolve(Overrides{}, Inputs{Env: envOf(env), Names: func() []string { return sortedKeys(env) }})
	if err == nil || !strings.Contains(err.Error(), "PROFILE_gold_SNAT") || !strings.Contains(err.Error(), "(env)") {
		t.Errorf("a bad profile key in the environment: %v", err)
	}
}

// Groups by tag: IDs and selectors side by side, in the order given; the
// selectors are resolved by the pass that needs them, not here.
func TestAProfilesGroupsMayBeTagSelectors(t *testing.T) {
	f := fileOf(t, "PROFILE_PAY_SECURITY_GROUPS=sg-1, tag:team=payments,tag:env=,tag:team=payments\nPROFILE_WEB_SECURITY_GROUPS=tag:app=web\n")
	e, err := Resolve(Overrides{}, Inputs{File: f})
	if err != nil {
		t.Fatal(err)
	}
	pay, _ := e.Profile("pay")
	want := []TagSelector{{"team", "payments"}, {"env", ""}}
	if !slices.Equal(pay.SecurityGroups, []string{"sg-1"}) || !slices.Equal(pay.GroupTags, want) || !pay.GroupsByTag() {
		t.Fatalf("pay: groups %v, selectors %v", pay.SecurityGroups, pay.GroupTags)
	}
	if v := e.Value("PROFILE_PAY_SECURITY_GROUPS"); v.Value != "sg-1,tag:team=payments,tag:env=" {
		t.Fatalf("shown as %+v", v)
	}
	web, _ := e.Profile("web")
	if len(web.SecurityGroups) != 0 || !slices.Equal(web.GroupTags, []TagSelector{{"app", "web"}}) || web.GroupTags[0].String() != "tag:app=web" {
		t.Fatalf("web: groups %v, selectors %v", web.SecurityGroups, web.GroupTags)
	}
}

func TestTheFileRefusesAnUnknownProfileKey(t *testing.T) {
	_, err := ParseFile("/etc/vpc-cni/config", []byte("PROFILE_GOLD_GROUPS=sg-1\n"))
	if err == nil || !strings.Contains(err.Error(), "config:1") || !strings.Contains(err.Error(), "PROFILE_GOLD_GROUPS") {
		t.Fatalf("%v", err)
	}
}

func TestProfilesListsWhichAPodMayPick(t *testing.T) {
	f := fileOf(t, "PROFILE_GOLD_SNAT=none\nPROFILE_BLUE_SNAT=node\nPROFILES=gold\n")
	e, err := Resolve(Overrides{}, Inputs{File: f})
	if err != nil {
		t.Fatal(err)
	}
	gold, _ := e.Profile("gold")
	blue, _ := e.Profile("blue")
	if !gold.Allowed || blue.Allowed {
		t.Fatalf("gold allowed %v, blue allowed %v; PROFILES=gold", gold.Allowed, blue.Allowed)
	}
	if pools := e.PoolConfigs(); len(pools) != 2 || pools[1].Profile != "gold" {
		t.Fatalf("pools %+v: want the default pool's and gold's only (the node does not serve blue)", pools)
	}
	if _, ok := e.Profile("red"); ok {
		t.Fatal("an unconfigured profile was found")
	}
	var _ pool.Config = blue.Pool
}
