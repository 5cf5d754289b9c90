package status

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
	"time"

	"vpc-cni/internal/printers"
	"vpc-cni/pool"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// statusWith loads the status of a one-ENI node under the configuration
// text, and its table.
func statusWith(t *testing.T, config string) (PoolStatus, string) {
	t.Helper()
	return statusOf(t, config, func(*store.Tx) error { return nil })
}

// statusOf is statusWith with more state written by more.
func statusOf(t *testing.T, config string, more func(*store.Tx) error) (PoolStatus, string) {
	t.Helper()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	st, err := store.OpenNew(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = st.Update(func(tx *store.Tx) error {
		n := store.Node{InstanceID: "i-1", InstanceType: "t3.small", PrimaryENI: "eni-0", Limits: pool.Limits{MaxENIs: 3, IPv4PerENI: 4}}
		if err := tx.PutNode(n); err != nil {
			return err
		}
		if err := tx.PutENI(pool.ENI{ID: "eni-0", Ready: true, PrimaryIP: netip.MustParseAddr("100.64.0.5")}); err != nil {
			return err
		}
		return more(tx)
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := settings.ParseFile("config", []byte(config))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Load(st, settings.Inputs{File: f}, now)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := printers.Render(&buf, "table", false, s, func(t *printers.Table) { Table(t, s) }); err != nil {
		t.Fatal(err)
	}
	return s, buf.String()
}

// pool status says which profiles any pod may pick: those no namespace
// binds on the node, while no admission policy is declared.
func TestPoolStatusSaysWhichProfilesAnyPodMayPick(t *testing.T) {
	s, table := statusWith(t, "PROFILE_GOLD_SNAT=none\nPROFILE_BLUE_SNAT=none\nPROFILE_BLUE_NAMESPACES=web,api\n")
	if len(s.Profiles) != 2 || s.Profiles[0].Name != "blue" || s.Profiles[0].AnyPod || !s.Profiles[1].AnyPod {
		t.Fatalf("profiles %+v: want blue bound, gold open to any pod", s.Profiles)
	}
	for _, want := range []string{"for namespaces web,api", "any pod may pick it: no PROFILE_GOLD_NAMESPACES and no admission policy (VPC_CNI_PROFILE_ADMISSION)"} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "PROFILE_BLUE_NAMESPACES and no") {
		t.Errorf("the table calls bound blue open:\n%s", table)
	}
	s, table = statusWith(t, "PROFILE_GOLD_SNAT=none\nVPC_CNI_PROFILE_ADMISSION=true\n")
	if s.Profiles[0].AnyPod || strings.Contains(table, "any pod may pick") {
		t.Errorf("with the admission policy declared, gold is not open:\n%s", table)
	}
}
