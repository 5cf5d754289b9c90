package e2e

import (
	"encoding/json"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"vpc-cni/hostnet"
)

const excludeEnv = "AWS_VPC_K8S_CNI_EXCLUDE_SNAT_CIDRS="

// podOnSecondaryENI adds pods until one gets an address of a secondary ENI.
func (v *vpcNet) podOnSecondaryENI() (*pod, netip.Addr) {
	v.w.tb.Helper()
	conf := mustJSON(v.w.tb, v.w.conf(nil))
	for i := range 8 {
		p := v.w.newPod("egress" + string(rune('a'+i)))
		res := v.w.add(p, conf)
		ip, _ := netip.AddrFromSlice(res.IPs[0].Address.IP.To4())
		for _, a := range v.w.assignments() {
			if a.IP == ip && a.DeviceIndex > 0 {
				return p, ip
			}
		}
	}
	v.w.tb.Fatal("no pod landed on a secondary ENI")
	return nil, netip.Addr{}
}

func sees(t *testing.T, from ns.NetNS, to netip.Addr, port uint16, want netip.Addr) {
	t.Helper()
	got, err := whoami(from, netip.AddrPortFrom(to, port))
	if err != nil {
		t.Fatalf("connecting to %s:%d: %v", to, port, err)
	}
	if got != want.String() {
		t.Fatalf("%s:%d saw source %s; want %s", to, port, got, want)
	}
}

func unreachable(t *testing.T, from ns.NetNS, to netip.Addr, port uint16, why string) {
	t.Helper()
	if got, err := whoami(from, netip.AddrPortFrom(to, port)); err == nil {
		t.Fatalf("%s:%d answered (saw %s), but %s", to, port, got, why)
	}
}

func (v *vpcNet) ourChains() []string {
	var names []string
	v.w.inNode(func() error {
		c, err := nftables.New()
		if err != nil {
			return err
		}
		chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyIPv4)
		for _, ch := range chains {
			if ch.Table.Name == hostnet.TableName {
				names = append(names, ch.Name)
			}
		}
		return err
	})
	slices.Sort(names)
	return names
}

// doctorSaysRulesInPlace reads the "node rules" check of `vpcctl doctor -o json`.
func (v *vpcNet) doctorSaysRulesInPlace(t *testing.T, env []string) bool {
	t.Helper()
	r := v.w.vpcctl(env, "doctor", "-o", "json")
	var found []struct {
		Check string `json:"check"`
		OK    bool   `json:"ok"`
	}
	if err := json.Unmarshal(r.stdout, &found); err != nil {
		t.Fatalf("doctor output: %v\n%s", err, r.stdout)
	}
	for _, f := range found {
		if f.Check == "node rules" {
			return f.OK
		}
	}
	t.Fatalf("doctor has no node rules check: %s", r.stdout)
	return false
}

// statusSaysRulesInPlace reads nodeRules.inPlace of `vpcctl pool status -o json`.
func (v *vpcNet) statusSaysRulesInPlace(t *testing.T, env []string) bool {
	t.Helper()
	r := v.w.vpcctl(env, "pool", "status", "-o", "json")
	var s struct {
		NodeRules *struct {
			InPlace bool `json:"inPlace"`
		} `json:"nodeRules"`
	}
	if err := json.Unmarshal(r.stdout, &s); err != nil || s.NodeRules == nil {
		t.Fatalf("pool status output (%v): %s", err, r.stdout)
	}
	return s.NodeRules.InPlace
}

// rulesStatus runs `vpcctl node-rules status` with the knobs of env, as an
// operator would with the node's environment file.
func (v *vpcNet) rulesStatus(env []string) int {
	r := v.w.vpcctl(env, "node-rules", "status")
	return r.state.ExitCode()
}

// Egress, VPC traffic, excluded CIDRs and NodePort through a VPC that drops
// what EC2 drops, then a flush by another program, external SNAT and removal.
func TestPrivilegedNodeRulesOnASimulatedVPC(t *testing.T) {
	env := []string{"WARM_IP_TARGET=8", excludeEnv + peeredCIDR}
	v := newVPCWorld(t, env...)
	p, podIP := v.podOnSecondaryENI()
	v.must(p.ns, func() error {
		t.Cleanup(serveWhoami(t, netip.AddrPortFrom(podIP, podPort)))
		return nil
	})

	t.Run("egress to the internet leaves as the primary address", func(t *testing.T) {
		sees(t, p.ns, internetIP, whoamiPort, v.primaryIP)
	})
	t.Run("traffic in the VPC keeps the pod's address", func(t *testing.T) {
		sees(t, p.ns, clientIP, whoamiPort, podIP)
	})
	t.Run("an excluded CIDR is not SNATed", func(t *testing.T) {
		sees(t, p.ns, peeredIP, whoamiPort, podIP)
	})
	t.Run("a NodePort on the primary address reaches a pod on a secondary ENI and the reply comes back", func(t *testing.T) {
		v.addNodePort(podIP)
		sees(t, v.client, v.primaryIP, nodePort, clientIP)
	})
	t.Run("a service address DNATed to a VPC endpoint is neither marked nor SNATed", func(t *testing.T) {
		v.addDNAT(serviceIP, 80, clientIP, whoamiPort)
		sees(t, p.ns, serviceIP, 80, podIP)
	})
	t.Run("rules flushed by another program are back after the next pass", func(t *testing.T) {
		v.w.inNode(func() error {
			c, err := nftables.New()
			if err != nil {
				return err
			}
			c.DelTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: hostnet.TableName})
			if err := c.Flush(); err != nil {
				return err
			}
			mark := uint32(hostnet.DefaultConnMark)
			r := netlink.NewRule()
			r.Family, r.Priority, r.Mark, r.Mask, r.Table = unix.AF_INET, hostnet.PrioFwmark, mark, &mark, unix.RT_TABLE_MAIN
			return netlink.RuleDel(r)
		})
		if code := v.rulesStatus(env); code != 1 {
			t.Fatalf("node-rules status after the flush exited %d; want 1", code)
		}
		if v.doctorSaysRulesInPlace(t, env) || v.statusSaysRulesInPlace(t, env) {
			t.Fatal("doctor or pool status says the flushed rules are in place")
		}
		unreachable(t, p.ns, internetIP, whoamiPort, "without SNAT the internet gateway drops a pod's own address")
		v.w.reconcile(env...)
		if code := v.rulesStatus(env); code != 0 {
			t.Fatalf("node-rules status after reconcile exited %d; want 0", code)
		}
		if !v.doctorSaysRulesInPlace(t, env) || !v.statusSaysRulesInPlace(t, env) {
			t.Fatal("doctor or pool status says the repaired rules are not in place")
		}
		sees(t, p.ns, internetIP, whoamiPort, v.primaryIP)
		sees(t, v.client, v.primaryIP, nodePort, clientIP)
	})
	t.Run("a changed knob rebuilds the rules: without the exclusion the peered network sees the primary address", func(t *testing.T) {
		v.w.writeConfig([]string{"WARM_IP_TARGET=8"}) // the operator drops the exclusion from the file
		v.w.reconcile("WARM_IP_TARGET=8")
		sees(t, p.ns, peeredIP, whoamiPort, v.primaryIP)
	})
	t.Run("a CIDR associated with the VPC later keeps the pod's address", func(t *testing.T) {
		v.w.sim.AssociateVPCCIDR(netip.MustParsePrefix(peeredCIDR))
		v.w.reconcile("WARM_IP_TARGET=8")
		sees(t, p.ns, peeredIP, whoamiPort, podIP)
		sees(t, p.ns, internetIP, whoamiPort, v.primaryIP)
		if code := v.rulesStatus([]string{"WARM_IP_TARGET=8"}); code != 0 {
			t.Fatalf("node-rules status exited %d; want 0 (it must expect the stored CIDRs)", code)
		}
	})
	t.Run("with external SNAT no SNAT rule exists and pods keep their address", func(t *testing.T) {
		v.w.reconcile("WARM_IP_TARGET=8", "AWS_VPC_K8S_CNI_EXTERNALSNAT=true")
		if got := v.ourChains(); !slices.Equal(got, []string{"mark"}) {
			t.Fatalf("chains %v; want only the NodePort marking", got)
		}
		sees(t, p.ns, peeredIP, whoamiPort, podIP)
		sees(t, v.client, v.primaryIP, nodePort, clientIP)
	})
	t.Run("removed on request", func(t *testing.T) {
		r := v.w.vpcctl(nil, "node-rules", "remove")
		if r.err != nil || !strings.Contains(string(r.stdout), "removed nftables table ip vpc-cni") {
			t.Fatalf("node-rules remove: %v; it must name what it removed\n%s%s", r.err, r.stdout, r.stderr)
		}
		if r := v.w.vpcctl(nil, "node-rules", "remove"); r.err != nil || !strings.Contains(string(r.stdout), "nothing to remove") {
			t.Fatalf("a second node-rules remove: %v; it must say nothing was there\n%s%s", r.err, r.stdout, r.stderr)
		}
		if got := v.ourChains(); len(got) != 0 {
			t.Fatalf("chains left: %v", got)
		}
		unreachable(t, v.client, v.primaryIP, nodePort, "without the connmark the reply leaves by the pod's ENI and the VPC drops it")
	})
}

// Where no link has the primary ENI's MAC, the rules are not this host's:
// no status says they are in place, and remove refuses to touch the
// namespace's rules.
func TestPrivilegedNodeRulesNotManagedHereSaysSo(t *testing.T) {
	w := newWorld(t, worldOpts{})
	w.reconcile()
	var s struct {
		State   string `json:"state"`
		InPlace bool   `json:"inPlace"`
		Managed bool   `json:"managed"`
	}
	r := w.vpcctl(nil, "node-rules", "status", "-o", "json")
	if err := json.Unmarshal(r.stdout, &s); err != nil || r.err != nil {
		t.Fatalf("node-rules status: %v %v\n%s%s", r.err, err, r.stdout, r.stderr)
	}
	if s.State != "not managed here" || s.InPlace || s.Managed {
		t.Errorf("node-rules status says %+v; want not managed here, not in place", s)
	}
	if r := w.vpcctl(nil, "pool", "status"); !strings.Contains(string(r.stdout), "not managed here") ||
		regexp.MustCompile(`NODE RULES +yes`).Match(r.stdout) {
		t.Errorf("pool status:\n%s", r.stdout)
	}
	r = w.vpcctl(nil, "node-rules", "remove")
	if r.state.ExitCode() != 1 || !strings.Contains(string(r.stderr), "not the node's network namespace") {
		t.Errorf("node-rules remove outside the node's namespace: exit %d\n%s%s", r.state.ExitCode(), r.stdout, r.stderr)
	}
	if r := w.vpcctl(nil, "doctor"); regexp.MustCompile(`pool full +yes`).Match(r.stdout) {
		t.Errorf("doctor says the pool is full while it has room:\n%s", r.stdout)
	}
}
