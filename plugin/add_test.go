package plugin

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"

	"vpc-cni/netns"
	"vpc-cni/pool"
	"vpc-cni/store"
)

var twoENIs = pool.Limits{MaxENIs: 2, IPv4PerENI: 4}

func TestAddTakesTheLowestFreeAddressAndWiresThePod(t *testing.T) {
	n := newTestNode(t).seed(twoENIs, eni(0, "100.64.0.11", "100.64.0.10"))
	out, err := n.run("ADD", n.args("c1", n.conf("1.1.0", map[string]any{"mtu": 1500})))
	if err != nil {
		t.Fatal(err)
	}
	var r current.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	veth := netns.HostVethNameFor("default", "c1", "c1")
	if r.CNIVersion != "1.1.0" || len(r.IPs) != 1 || r.IPs[0].Address.String() != "100.64.0.10/32" ||
		r.IPs[0].Gateway.String() != "169.254.1.1" || *r.IPs[0].Interface != 1 || len(r.Routes) != 1 ||
		r.Routes[0].Dst.String() != "0.0.0.0/0" {
		t.Fatalf("result %s", out)
	}
	if len(r.Interfaces) != 2 || r.Interfaces[0].Name != veth || r.Interfaces[0].Sandbox != "" ||
		r.Interfaces[1].Name != "eth0" || r.Interfaces[1].Sandbox != n.netns {
		t.Fatalf("interfaces %s: want the host veth %s, then eth0 in the pod", out, veth)
	}
	want := netns.Pod{NetnsPath: n.netns, IfName: "eth0", HostVeth: veth, MTU: 1500, IP: netip.MustParseAddr("100.64.0.10"),
		Sandbox: netns.Sandbox{Network: "vpc", ContainerID: "c1", IfName: "eth0"}}
	if got := n.host.pods[want.IP]; got != want {
		t.Fatalf("wired %+v, want %+v", got, want)
	}
	a, ok := n.assignment("c1/eth0")
	if !ok || a.IP != want.IP || a.ENIID != "eni-0" || a.Network != "vpc" || a.Netns != n.netns ||
		a.PodNamespace != "default" || a.PodName != "c1" || a.PodUID != "uid-c1" || a.HostVeth != veth {
		t.Fatalf("assignment %+v", a)
	}
	if n.state("100.64.0.10") != pool.Assigned || n.state("100.64.0.11") != pool.Free || n.counter(CounterAdds) != 1 {
		t.Fatalf("pool after ADD: .10 %s, .11 %s, adds %d", n.state("100.64.0.10"), n.state("100.64.0.11"), n.counter(CounterAdds))
	}
}

func TestAddIsIdempotentPerContainerAndInterface(t *testing.T) {
	n := newTestNode(t).seed(twoENIs, eni(0, "100.64.0.10", "100.64.0.11", "100.64.0.12"))
	first, again, other := n.add("c1"), n.add("c1"), n.add("c2")
	if first.String() != "100.64.0.10" || again != first || other.String() != "100.64.0.11" {
		t.Fatalf("c1 got %s then %s, c2 got %s: want .10 twice, then .11", first, again, other)
	}
	if n.state("100.64.0.12") != pool.Free {
		t.Fatal("a repeated ADD took a second address")
	}
}

func TestAddOnASecondaryENIRoutesThroughItsTable(t *testing.T) {
	n := newTestNode(t).seed(twoENIs, eni(0), eni(2, "100.64.1.20"))
	ip := n.add("c1")
	if p := n.host.pods[ip]; ip.String() != "100.64.1.20" || p.Table != 3 {
		t.Fatalf("ADD got %s wired with table %d: want 100.64.1.20 on table 3 (device 2 + 1)", ip, p.Table)
	}
}

func TestAddGivesTheAddressBackWhenWiringFails(t *testing.T) {
	n := newTestNode(t).seed(twoENIs, eni(0, "100.64.0.10", "100.64.0.11"))
	n.host.fail["SetupPod"] = errKernel
	out, err := n.run("ADD", n.args("c1", n.conf("1.1.0", nil)))
	wantCode(t, err, types.ErrInternal, "wiring pod default/c1 with 100.64.0.10: "+errKernel.Error())
	if out != "" {
		t.Fatalf("a failed ADD printed %q", out)
	}
	if _, ok := n.assignment("c1/eth0"); ok {
		t.Fatal("the assignment outlived the failed ADD")
	}
	// Back in the pool, cooling like any freed address, so the next pod
	// does not get an address a half-made wiring may still route.
	if n.state("100.64.0.10") != pool.Cooling {
		t.Fatalf(".10 is %s, want cooling", n.state("100.64.0.10"))
	}
	delete(n.host.fail, "SetupPod")
	if ip := n.add("c2"); ip.String() != "100.64.0.11" {
		t.Fatalf("next ADD got %s, want .11", ip)
	}
}

func TestAddWithoutAFreeAddressAndInlineGrowOffIsTryAgainLater(t *testing.T) {
	n := newTestNode(t).seed(twoENIs, eni(0, "100.64.0.10"))
	n.add("c1")
	_, err := n.run("ADD", n.args("c2", n.conf("1.1.0", nil)))
	wantCode(t, err, types.ErrTryAgainLater, "inline grow is off")
	if _, ok := n.assignment("c2/eth0"); ok || n.counter(CounterNoFreeAddress) != 1 || n.counter(CounterAdds) != 1 {
		t.Fatalf("counters: adds %d, without address %d", n.counter(CounterAdds), n.counter(CounterNoFreeAddress))
	}
	if len(n.host.pods) != 1 {
		t.Fatal("a pod without an address was wired")
	}
}

// Bad input is refused with its code before anything changes.
func TestAddRefusesBadInputWithoutChangingState(t *testing.T) {
	n := newTestNode(t).seed(twoENIs, eni(0, "100.64.0.10"))
	notDir := filepath.Join(n.dir, "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		edit func(a *argsEdit)
		code uint
		msg  string
	}{
		{"malformed config", func(a *argsEdit) { a.conf = []byte(`{"name":`) }, types.ErrDecodingFailure, "malformed"},
		{"bad mtu", func(a *argsEdit) { a.extra["mtu"] = 100 }, types.ErrInvalidNetworkConfig, "mtu 100"},
		{"bad CNI_ARGS", func(a *argsEdit) { a.args = "K8S_POD_NAME" }, types.ErrInvalidEnvironmentVariables, `"K8S_POD_NAME" is not KEY=VALUE`},
		{"no netns", func(a *argsEdit) { a.netns = "" }, types.ErrInvalidEnvironmentVariables, "CNI_NETNS is required"},
		{"missing netns", func(a *argsEdit) { a.netns = "/proc/nonexistent/ns/net" }, types.ErrInvalidNetNS, "/proc/nonexistent/ns/net"},
		{"unusable state dir", func(a *argsEdit) { a.extra["stateDir"] = filepath.Join(notDir, "state") }, types.ErrIOFailure, "state dir"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := &argsEdit{extra: map[string]any{}, netns: n.netns, args: "K8S_POD_NAMESPACE=default;K8S_POD_NAME=c1"}
			tc.edit(e)
			args := n.args("c1", n.conf("1.1.0", e.extra))
			if e.conf != nil {
				args.StdinData = e.conf
			}
			args.Netns, args.Args = e.netns, e.args
			out, err := n.run("ADD", args)
			wantCode(t, err, tc.code, tc.msg)
			if out != "" || len(n.host.pods) != 0 || n.state("100.64.0.10") != pool.Free || n.counter(CounterAdds) != 0 {
				t.Fatalf("refused ADD changed state: printed %q, pods %v, .10 %s", out, n.host.pods, n.state("100.64.0.10"))
			}
		})
	}
}

type argsEdit struct {
	conf        []byte
	extra       map[string]any
	netns, args string
}

// The result is printed in the configuration's version, as the runtime asked.
func TestAddPrintsTheResultInTheConfiguredVersion(t *testing.T) {
	for _, v := range []string{"0.4.0", "1.0.0", "1.1.0"} {
		t.Run(v, func(t *testing.T) {
			n := newTestNode(t).seed(twoENIs, eni(0, "100.64.0.10"))
			out, err := n.run("ADD", n.args("c1", n.conf(v, nil)))
			if err != nil {
				t.Fatal(err)
			}
			var head struct{ CNIVersion string }
			if err := json.Unmarshal([]byte(out), &head); err != nil || head.CNIVersion != v {
				t.Fatalf("printed %s, want cniVersion %s", out, v)
			}
			r, err := version.NewResult(v, []byte(out))
			if err != nil {
				t.Fatal(err)
			}
			res, err := current.NewResultFromResult(r)
			if err != nil || len(res.IPs) != 1 || res.IPs[0].Address.String() != "100.64.0.10/32" || len(res.Interfaces) != 2 {
				t.Fatalf("%s result %s: %v", v, out, err)
			}
		})
	}
}

func TestAddAsIPAMDelegateSetsOnlyThePolicyRules(t *testing.T) {
	n := newTestNode(t).seed(twoENIs, eni(0), eni(1, "100.64.1.5"))
	out, err := n.run("ADD", n.args("c1", n.ipamConf("1.0.0", map[string]any{"mtu": 1400})))
	if err != nil {
		t.Fatal(err)
	}
	var r current.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	// The address in the node's subnet, so ptp's subnet route works.
	if len(r.IPs) != 1 || r.IPs[0].Address.String() != "100.64.1.5/16" || r.IPs[0].Gateway.String() != "169.254.1.1" ||
		len(r.Interfaces) != 0 || r.IPs[0].Interface != nil {
		t.Fatalf("IPAM result %s", out)
	}
	if len(n.host.pods) != 0 || len(n.host.rules) != 1 || n.host.rules[netip.MustParseAddr("100.64.1.5")] != 2 {
		t.Fatalf("delegate wired pods %v, rules %v: want only a rule to table 2", n.host.pods, n.host.rules)
	}
}

func TestAddAsIPAMDelegateGivesTheAddressBackWhenTheRulesFail(t *testing.T) {
	n := newTestNode(t).seed(twoENIs, eni(0, "100.64.0.10"))
	n.host.fail["SetPodRules"] = errKernel
	_, err := n.run("ADD", n.args("c1", n.ipamConf("1.1.0", nil)))
	wantCode(t, err, types.ErrInternal, "policy rules for 100.64.0.10")
	if _, ok := n.assignment("c1/eth0"); ok || n.state("100.64.0.10") != pool.Cooling {
		t.Fatalf("after the failed ADD: .10 is %s", n.state("100.64.0.10"))
	}
}

// The store's errors reach the runtime with a code it can act on.
func TestStoreErrorsMapToCNICodes(t *testing.T) {
	if err := storeErr("x", store.ErrBusy); codeOf(err) != types.ErrTryAgainLater {
		t.Fatalf("busy store: %v", err)
	}
	if err := storeErr("x", os.ErrPermission); codeOf(err) != types.ErrIOFailure {
		t.Fatalf("unreadable store: %v", err)
	}
	cni := types.NewError(types.ErrInvalidNetworkConfig, "bad", "")
	if err := storeErr("x", cni); err != error(cni) {
		t.Fatalf("a CNI error was rewrapped: %v", err)
	}
}

// Custom networking is this invocation's knob: the moment it is on, ADD
// leaves the primary ENI's free addresses alone, although no pass has yet
// marked the primary not ready, and an ADD that finds only those says the
// pool is empty.
func TestAddUnderCustomNetworkingSkipsThePrimaryENIBeforeAnyPass(t *testing.T) {
	n := newTestNode(t).seed(twoENIs, eni(0, "100.64.0.10", "100.64.0.11"), eni(1, "100.64.1.20"))
	t.Setenv("AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG", "true")
	if ip := n.add("c1"); ip.String() != "100.64.1.20" {
		t.Fatalf("ADD got %s; want 100.64.1.20 on the secondary ENI, not the primary's .10", ip)
	}
	_, err := n.run("ADD", n.args("c2", n.conf("1.1.0", nil)))
	wantCode(t, err, types.ErrTryAgainLater, "no free address")
	if n.state("100.64.0.10") != pool.Free || n.state("100.64.0.11") != pool.Free {
		t.Fatal("an ADD under custom networking took an address of the primary ENI")
	}
	// The node is busy, not broken: STATUS stays ready.
	if _, err = n.run("STATUS", n.args("", n.conf("1.1.0", nil))); err != nil {
		t.Fatal(err)
	}

	t.Setenv("AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG", "false")
	if ip := n.add("c2"); ip.String() != "100.64.0.10" {
		t.Fatalf("custom networking off: ADD got %s, want the primary's .10", ip)
	}
}

// With the state file lost under running pods and inline grow off, ADD
// refuses with code 5 naming the rebuild, and takes nothing.
func TestAddOnALostStateFileRefusesWithoutInlineGrow(t *testing.T) {
	n := newTestNode(t)
	n.host.wiring = running
	_, err := n.run("ADD", n.args("c1", n.conf("1.1.0", nil)))
	wantCode(t, err, types.ErrIOFailure, "state lost: 2 running pods' wiring found with no state; run `vpcctl state rebuild`")
	if _, ok := n.assignment("c1/eth0"); ok || len(n.host.pods) != 0 {
		t.Fatalf("the refused ADD took an address or wired the pod: %+v", n.host.pods)
	}
}
