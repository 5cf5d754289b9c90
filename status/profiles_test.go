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

func TestPoolStatusShowsEachPool(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	st, err := store.OpenNew(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	free := func(ips ...string) []pool.Block {
		var out []pool.Block
		for _, s := range ips {
			ip := netip.MustParseAddr(s)
			out = append(out, pool.Block{CIDR: netip.PrefixFrom(ip, 32), Addrs: []pool.Addr{{IP: ip, State: pool.Free, Since: now}}})
		}
		return out
	}
	err = st.Update(func(tx *store.Tx) error {
		n := store.Node{InstanceID: "i-1", InstanceType: "t3.small", PrimaryENI: "eni-0", Limits: pool.Limits{MaxENIs: 3, IPv4PerENI: 4}}
		if err := tx.PutNode(n); err != nil {
			return err
		}
		enis := []pool.ENI{
			{ID: "eni-0", Ready: true, PrimaryIP: netip.MustParseAddr("100.64.0.5"), Blocks: free("100.64.0.6", "100.64.0.7", "100.64.0.8")},
			{ID: "eni-1", DeviceIndex: 1, Ready: true, Profile: "gold", PrimaryIP: netip.MustParseAddr("100.64.1.5"), Blocks: free("100.64.1.6")},
			{ID: "eni-2", DeviceIndex: 2, Ready: true, Profile: "old", PrimaryIP: netip.MustParseAddr("100.64.2.5"), Blocks: free("100.64.2.6")},
		}
		for _, e := range enis {
			if err := tx.PutENI(e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := settings.ParseFile("config", []byte("WARM_IP_TARGET=3\nPROFILE_GOLD_SECURITY_GROUPS=sg-9\nPROFILE_GOLD_WARM_IP_TARGET=2\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Load(st, settings.Inputs{File: f}, now)
	if err != nil {
		t.Fatal(err)
	}
	if s.Figures.Free != 3 || s.Figures.ENIs != 1 || s.Figures.Others != 2 {
		t.Fatalf("the default pool: %+v, want its 3 free on its 1 ENI, 2 ENIs of other pools", s.Figures)
	}
	if len(s.Profiles) != 2 || s.Profiles[0].Name != "gold" || !s.Profiles[0].Configured || s.Profiles[1].Name != "old" || s.Profiles[1].Configured {
		t.Fatalf("profiles %+v", s.Profiles)
	}
	gold := s.Profiles[0]
	if gold.Figures.Free != 1 || gold.Figures.Shortfall != 1 || len(gold.ENIs) != 1 || gold.SecurityGroups[0] != "sg-9" {
		t.Fatalf("gold: %+v", gold)
	}
	if gold.Full == nil || gold.Full.Full {
		t.Fatalf("gold has a free address: %+v", gold.Full)
	}
	if len(gold.Pending) != 1 || gold.Pending[0].Kind != pool.Assign || gold.Pending[0].ENIID != "eni-1" {
		t.Fatalf("gold's next pass: %+v, want one assign on its own ENI", gold.Pending)
	}
	if old := s.Profiles[1]; len(old.Pending) != 0 || old.Figures.Excess != 1 {
		t.Fatalf("the retired profile: %+v, want its free address as excess (released after the delay)", old)
	}
	var buf bytes.Buffer
	if err := printers.Render(&buf, "table", false, s, func(t *printers.Table) { Table(t, s) }); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"PROFILE gold", "groups sg-9", "PROFILE old", "no longer configured", "eni-1", "gold"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, buf.String())
		}
	}
}

// A profile pool backed off for want of subnet addresses says so, and
// until when, though it still has a free address; the default pool is not.
func TestPoolStatusSaysAProfileIsBackedOff(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) // statusWith's
	why := "profile gold's subnets exhausted: no subnet of profile gold has 3 free addresses"
	s, table := statusOf(t, "PROFILE_GOLD_SECURITY_GROUPS=sg-9\nPROFILE_GOLD_WARM_IP_TARGET=2\n", func(tx *store.Tx) error {
		ip := netip.MustParseAddr("100.64.1.6")
		gold := pool.ENI{ID: "eni-1", DeviceIndex: 1, Ready: true, Profile: "gold", PrimaryIP: netip.MustParseAddr("100.64.1.5"),
			Blocks: []pool.Block{{CIDR: netip.PrefixFrom(ip, 32), Addrs: []pool.Addr{{IP: ip, State: pool.Free, Since: now}}}}}
		if err := tx.PutENI(gold); err != nil {
			return err
		}
		return tx.PutPoolTimers("gold", pool.Timers{GrowBlockedUntil: now.Add(time.Minute), GrowBlockedWhy: why})
	})
	if len(s.Profiles) != 1 {
		t.Fatalf("profiles %+v", s.Profiles)
	}
	js, err := json.Marshal(s.Profiles[0])
	if err != nil || !strings.Contains(string(js), `"growBlocked":"until 2026-12-01T12:01:00Z: `+why) {
		t.Fatalf("gold's status %s (%v), want its back-off in growBlocked", js, err)
	}
	if s.GrowBlocked != "" || len(s.Profiles[0].Pending) != 0 {
		t.Fatalf("default pool blocked %q; gold's next pass %+v", s.GrowBlocked, s.Profiles[0].Pending)
	}
	if !strings.Contains(table, "growth blocked until 2026-12-01T12:01:00Z: "+why) {
		t.Fatalf("the table does not say gold is backed off:\n%s", table)
	}
}
