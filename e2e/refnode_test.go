package e2e

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"vpc-cni/netns"
)

// A node the reference (amazon-vpc-cni-k8s) runs, built without this
// plugin: ipamd's EC2 calls made with the real SDK against the emulator, the
// pods wired by hand as the reference's plugin wires them, and ipamd's
// checkpoint in its format.

// refEC2 is an EC2 client as ipamd has one. The emulator listens inside the
// node netns, which the SDK's dialing goroutines would not be in, so the
// requests reach its handler in-process: the same wire format, no socket.
func refEC2(w *world) *ec2.Client {
	return ec2.New(ec2.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String("http://ec2sim.invalid"),
		Credentials:  credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		HTTPClient:   handlerClient{w.sim.Handler()},
	})
}

type handlerClient struct{ h http.Handler }

func (c handlerClient) Do(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// refAllocate does what ipamd does on a new node: secondary addresses on
// the primary ENI, then a second ENI, tagged and described as ipamd's, with
// addresses of its own, attached at device 1. It returns the addresses per
// ENI ID.
func refAllocate(t *testing.T, w *world, primaryCount, secondCount int32) map[string][]netip.Addr {
	t.Helper()
	ctx, cl, st := context.Background(), refEC2(w), w.sim.State()
	primary := st.ENIs[0].ID
	if _, err := cl.AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{
		NetworkInterfaceId: aws.String(primary), SecondaryPrivateIpAddressCount: aws.Int32(primaryCount)}); err != nil {
		t.Fatalf("AssignPrivateIpAddresses: %v", err)
	}
	eni, err := cl.CreateNetworkInterface(ctx, &ec2.CreateNetworkInterfaceInput{
		SubnetId: aws.String(st.SubnetID), Description: aws.String("aws-K8S-" + st.InstanceID),
		SecondaryPrivateIpAddressCount: aws.Int32(secondCount),
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeNetworkInterface,
			Tags: []ec2types.Tag{{Key: aws.String("node.k8s.amazonaws.com/instance_id"), Value: aws.String(st.InstanceID)}}}},
	})
	if err != nil {
		t.Fatalf("CreateNetworkInterface: %v", err)
	}
	if _, err := cl.AttachNetworkInterface(ctx, &ec2.AttachNetworkInterfaceInput{NetworkInterfaceId: eni.NetworkInterface.NetworkInterfaceId,
		InstanceId: aws.String(st.InstanceID), DeviceIndex: aws.Int32(1)}); err != nil {
		t.Fatalf("AttachNetworkInterface: %v", err)
	}
	out := map[string][]netip.Addr{}
	for _, e := range w.sim.State().ENIs {
		out[e.ID] = e.Secondary
	}
	return out
}

// refPod is a pod the reference wired: its address and the route table of
// its ENI (0 for the primary).
type refPod struct {
	*pod
	ip    netip.Addr
	table int
}

// refWire wires p as the reference's plugin does (driver.go
// SetupPodNetwork): a veth "eni"+sha1(ns.name) on the node and eth0 in the
// pod; in the pod the /32 address, a link route to 169.254.1.1, the default
// route through it and a permanent neighbour entry for it; on the node the
// /32 route through the veth, "to IP lookup main" at 512 and, for a
// secondary ENI's address, "from IP lookup <table>" at 1536.
func refWire(t *testing.T, w *world, p refPod) {
	t.Helper()
	var hostMAC net.HardwareAddr
	w.inNode(func() error {
		veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: p.hostVeth(), MTU: 9001},
			PeerName: p.ifname, PeerNamespace: netlink.NsFd(int(p.ns.Fd()))}
		if err := netlink.LinkAdd(veth); err != nil {
			return err
		}
		host, err := netlink.LinkByName(p.hostVeth())
		if err != nil {
			return err
		}
		hostMAC = host.Attrs().HardwareAddr
		if err := netlink.LinkSetUp(host); err != nil {
			return err
		}
		dst := &net.IPNet{IP: p.ip.AsSlice(), Mask: net.CIDRMask(32, 32)}
		if err := netlink.RouteAdd(&netlink.Route{LinkIndex: host.Attrs().Index, Dst: dst, Scope: netlink.SCOPE_LINK}); err != nil {
			return err
		}
		to := netlink.NewRule()
		to.Priority, to.Dst, to.Table = netns.PrioToPod, dst, unix.RT_TABLE_MAIN
		if err := netlink.RuleAdd(to); err != nil {
			return err
		}
		if p.table == 0 {
			return nil
		}
		from := netlink.NewRule()
		from.Priority, from.Src, from.Table = netns.PrioFromPod, dst, p.table
		return netlink.RuleAdd(from)
	})
	if err := p.ns.Do(func(ns.NetNS) error { return refPodSide(p, hostMAC) }); err != nil {
		t.Fatalf("wiring %s's side: %v", p.name, err)
	}
}

func refPodSide(p refPod, hostMAC net.HardwareAddr) error {
	link, err := netlink.LinkByName(p.ifname)
	if err != nil {
		return err
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return err
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: p.ip.AsSlice(), Mask: net.CIDRMask(32, 32)}}
	if err := netlink.AddrAdd(link, addr); err != nil {
		return err
	}
	gw := netns.PodGateway.AsSlice()
	idx := link.Attrs().Index
	if err := netlink.RouteAdd(&netlink.Route{LinkIndex: idx, Dst: &net.IPNet{IP: gw, Mask: net.CIDRMask(32, 32)}, Scope: netlink.SCOPE_LINK}); err != nil {
		return err
	}
	if err := netlink.RouteAdd(&netlink.Route{LinkIndex: idx, Gw: gw}); err != nil {
		return err
	}
	return netlink.NeighAdd(&netlink.Neigh{LinkIndex: idx, IP: gw, HardwareAddr: hostMAC,
		State: netlink.NUD_PERMANENT, Family: unix.AF_INET})
}

// refCheckpoint writes ipamd's checkpoint naming pods: an IPv4 pod's row has
// its ipv4, an IPv6 pod's (ipamd's IPv6 mode) its ipv6.
func refCheckpoint(t *testing.T, version string, pods ...refPod) string {
	t.Helper()
	type meta struct {
		NS    string `json:"k8sPodNamespace"`
		Name  string `json:"k8sPodName"`
		Count int    `json:"interfacesCount"`
	}
	type alloc struct {
		Network string `json:"networkName"`
		ID      string `json:"containerID"`
		IfName  string `json:"ifName"`
		IPv4    string `json:"ipv4,omitempty"`
		IPv6    string `json:"ipv6,omitempty"`
		Time    int64  `json:"allocationTimestamp"`
		Meta    meta   `json:"metadata"`
	}
	doc := struct {
		Version     string  `json:"version"`
		Allocations []alloc `json:"allocations"`
	}{Version: version, Allocations: []alloc{}}
	for i, p := range pods {
		a := alloc{Network: "aws-cni", ID: p.id, IfName: p.ifname, Time: 1700000000000000000 + int64(i),
			Meta: meta{p.namespace, p.name, 1}}
		if p.ip.Is6() {
			a.IPv6 = p.ip.String()
		} else {
			a.IPv4 = p.ip.String()
		}
		doc.Allocations = append(doc.Allocations, a)
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return writeTemp(t, string(data))
}

// writeTemp writes content to an ipam.json of its own.
func writeTemp(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ipam.json")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// unwireByHand removes a pod's node side as if it had never been there.
func unwireByHand(t *testing.T, w *world, p refPod) {
	t.Helper()
	w.inNode(func() error {
		link, err := netlink.LinkByName(p.hostVeth())
		if err != nil {
			return err
		}
		if err := netlink.LinkDel(link); err != nil { // its route goes with it
			return err
		}
		to := netlink.NewRule()
		to.Priority, to.Dst, to.Table = netns.PrioToPod, &net.IPNet{IP: p.ip.AsSlice(), Mask: net.CIDRMask(32, 32)}, unix.RT_TABLE_MAIN
		return netlink.RuleDel(to)
	})
}
