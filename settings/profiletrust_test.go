package settings

import (
	"slices"
	"strings"
	"testing"

	"vpc-cni/pool"
)

func TestAProfileIsBoundToNamespacesFromTheFileOrTheEnvironment(t *testing.T) {
	if name, field, err := ParseProfileKey("PROFILE_PCI_DSS_NAMESPACES"); err != nil || name != "pci-dss" || field != ProfileNamespaces {
		t.Fatalf("PROFILE_PCI_DSS_NAMESPACES: %q %q %v", name, field, err)
	}
	file := fileOf(t, "PROFILE_GOLD_NAMESPACES=team-a, team-b,team-a\nPROFILE_BLUE_SNAT=none\nPROFILE_RED_NAMESPACES=web\n")
	env := map[string]string{"PROFILE_RED_NAMESPACES": "payments"}
	e, err := Resolve(Overrides{}, Inputs{Env: envOf(env), File: file, Names: func() []string { return sortedKeys(env) }})
	if err != nil {
		t.Fatal(err)
	}
	gold, _ := e.Profile("gold")
	blue, _ := e.Profile("blue")
	red, _ := e.Profile("red")
	if !slices.Equal(gold.Namespaces, []string{"team-a", "team-b"}) || !gold.Admits("team-b") || gold.Admits("other") || gold.Admits("") {
		t.Fatalf("gold: namespaces %v", gold.Namespaces)
	}
	if len(blue.Namespaces) != 0 || !blue.Admits("other") || !blue.Admits("") {
		t.Fatalf("blue is bound to no namespace: %v", blue.Namespaces)
	}
	if !slices.Equal(red.Namespaces, []string{"payments"}) || red.Admits("web") {
		t.Fatalf("red: the environment wins over the file: %v", red.Namespaces)
	}
	if v := e.Value("PROFILE_GOLD_NAMESPACES"); v.Value != "team-a,team-b" || v.Source != FromFile || !strings.Contains(v.Where, ":1") {
		t.Fatalf("shown as %+v", v)
	}
}

func TestABadNamespaceNamesTheKeyAndWhereItWasSet(t *testing.T) {
	long := strings.Repeat("a", 64)
	for _, c := range []struct{ value, bad string }{
		{"team-a,Team-B", "Team-B"}, {"-a", "-a"}, {"a-", "a-"}, {"a_b", "a_b"}, {"a.b", "a.b"}, {long, long}, {",", ""},
	} {
		_, err := Resolve(Overrides{}, Inputs{File: fileOf(t, "WARM_ENI_TARGET=1\nPROFILE_GOLD_NAMESPACES="+c.value)})
		want := `PROFILE_GOLD_NAMESPACES="` + c.value + `" (file /etc/vpc-cni/config:2): `
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), c.bad) {
			t.Errorf("%q: %v, want an error starting %q naming %q", c.value, err, want, c.bad)
		}
	}
	env := map[string]string{"PROFILE_GOLD_NAMESPACES": "kube_system"}
	_, err := Resolve(Overrides{}, Inputs{Env: envOf(env), Names: func() []string { return sortedKeys(env) }})
	if err == nil || !strings.Contains(err.Error(), `PROFILE_GOLD_NAMESPACES="kube_system" (env): "kube_system" is no namespace name`) {
		t.Errorf("from the environment: %v", err)
	}
	if _, err := Resolve(Overrides{}, Inputs{File: fileOf(t, "VPC_CNI_PROFILE_ADMISSION=yes-ish")}); err == nil ||
		!strings.Contains(err.Error(), `VPC_CNI_PROFILE_ADMISSION="yes-ish" (file /etc/vpc-cni/config:1)`) {
		t.Errorf("a bad VPC_CNI_PROFILE_ADMISSION: %v", err)
	}
}

// A profile the node serves is open to any pod unless it is bound to
// namespaces or an admission policy is declared.
func TestOpenProfilesAreThoseNoNamespaceOrPolicyBinds(t *testing.T) {
	cases := []struct {
		text string
		open []string
	}{
		{"WARM_ENI_TARGET=1", nil},
		{"PROFILE_GOLD_SNAT=none\nPROFILE_BLUE_SNAT=none\nPROFILE_RED_SNAT=none\nPROFILE_BLUE_NAMESPACES=web\nPROFILES=gold,blue", []string{"gold"}},
		{"PROFILE_GOLD_SNAT=none\nVPC_CNI_PROFILE_ADMISSION=true", nil},
		{"PROFILE_GOLD_SNAT=none\nVPC_CNI_PROFILE_ADMISSION=false", []string{"gold"}},
	}
	for _, c := range cases {
		e, err := Resolve(Overrides{}, Inputs{File: fileOf(t, c.text)})
		if err != nil {
			t.Fatal(err)
		}
		if got := e.OpenProfiles(); !slices.Equal(got, toPools(c.open)) {
			t.Errorf("%q: open %v, want %v", c.text, got, c.open)
		}
	}
	w := OpenProfilesWarning([]string{"gold"})
	for _, part := range []string{"any pod may pick", "gold", "PROFILE_<NAME>_NAMESPACES", "VPC_CNI_PROFILE_ADMISSION=true"} {
		if !strings.Contains(w, part) {
			t.Errorf("the warning %q lacks %q", w, part)
		}
	}
}

func toPools(names []string) []pool.Pool {
	var out []pool.Pool
	for _, n := range names {
		out = append(out, pool.Pool(n))
	}
	return out
}
