package status

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"vpc-cni/internal/printers"
	"vpc-cni/pool"
	"vpc-cni/settings"
	"vpc-cni/store"
)

func TestPoolStatusShowsTheIPv6Pool(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	st, err := store.OpenNew(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p80 := netip.MustParsePrefix("fd00:ec2:0:1:2::/80")
	err = st.Update(func(tx *store.Tx) error {
		n := store.Node{InstanceID: "i-1", InstanceType: "t3.small", PrimaryENI: "eni-0", Limits: pool.Limits{MaxENIs: 3, IPv4PerENI: 4}}
		if err := tx.PutNode(n); err != nil {
			return err
		}
		if err := tx.PutENI(pool.ENI{ID: "eni-0", Ready: true, PrimaryIP: netip.MustParseAddr("100.64.0.5")}); err != nil {
			return err
		}
		return tx.PutIPv6Pool(store.IPv6Pool{ENIID: "eni-0", Prefix: p80})
	})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{settings.EnableIPv6: "true", settings.EnableIPv4: "false", settings.PrefixDelegation: "true"}
	in := settings.Inputs{Env: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	e, err := settings.Resolve(settings.Overrides{}, in)
	if err != nil {
		t.Fatal(err)
	}
	spec := store.PodPoolOf(e.Specs()[0])
	spec.ConfirmedID = "i-1" // as a plugin that asked IMDS
	for _, k := range []string{"a/eth0", "b/eth0"} {
		if _, err := st.TakeForPod(store.Assignment{Key: k}, now, spec, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Update(func(tx *store.Tx) error { _, _, err := tx.Give("a/eth0", now); return err }); err != nil {
		t.Fatal(err)
	}
	s, err := Load(st, in, now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	want := IPv6PoolStatus{Mode: pool.FamilyIPv6, ENIID: "eni-0", Prefix: p80.String(), Assigned: 1, Cooling: 1,
		EgressRange: "169.254.172.0/22", EgressAssigned: 1}
	if s.IPv6 == nil || *s.IPv6 != want {
		t.Fatalf("ipv6 %+v", s.IPv6)
	}
	if len(s.Pods) != 1 || s.Pods[0].IP != "" || s.Pods[0].IPv6 != "fd00:ec2:0:1:2::2" || s.Pods[0].EgressIP != "169.254.172.3" {
		t.Fatalf("pods %+v", s.Pods)
	}
	var out bytes.Buffer
	if err := printers.Render(&out, "json", false, s, func(t *printers.Table) { Table(t, s) }); err != nil {
		t.Fatal(err)
	}
	var back struct {
		IPv6 map[string]any `json:"ipv6"`
	}
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || back.IPv6["prefix"] != p80.String() || back.IPv6["cooling"] != 1.0 {
		t.Fatalf("json %s: %v", out.String(), err)
	}
	for _, format := range []string{"yaml", "table"} {
		out.Reset()
		if err := printers.Render(&out, format, false, s, func(t *printers.Table) { Table(t, s) }); err != nil {
			t.Fatal(err)
		}
		for _, w := range map[string][]string{"yaml": {"ipv6:", `prefix: "fd00:ec2:0:1:2::/80"`, "egressAssigned: 1"},
			"table": {"IPV6 POOL", "ipv6: fd00:ec2:0:1:2::/80 on eni-0; 1 assigned, 1 cooling", "warm targets do not apply",
				"fd00:ec2:0:1:2::2,169.254.172.3"}}[format] {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s lacks %q:\n%s", format, w, out.String())
			}
		}
	}
	// Under IPv4-only knobs a recorded /80 is still shown (pods may hold /128s).
	s, err = Load(st, settings.Inputs{}, now)
	if err != nil || s.IPv6 == nil { // a pool is recorded: still shown
		t.Fatalf("recorded pool hidden: %+v %v", s.IPv6, err)
	}
}

func TestPoolStatusIPv4OnlyHasNoIPv6Section(t *testing.T) {
	st, err := store.OpenNew(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Update(func(tx *store.Tx) error { return tx.PutNode(store.Node{InstanceID: "i-1"}) }); err != nil {
		t.Fatal(err)
	}
	s, err := Load(st, settings.Inputs{}, time.Now())
	if err != nil || s.IPv6 != nil {
		t.Fatalf("%+v %v", s.IPv6, err)
	}
}
