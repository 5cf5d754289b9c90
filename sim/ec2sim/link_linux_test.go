//go:build linux

package ec2sim

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"vpc-cni/internal/testsupport/testenv"
)

// newTestNetns creates a named network namespace (never touching the root
// one) and deletes it when the test ends, even on failure.
func newTestNetns(t *testing.T) string {
	t.Helper()
	testenv.RequireRoot(t, "creates a network namespace")
	name := fmt.Sprintf("ec2sim-test-%d", os.Getpid())
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	ns, err := netns.NewNamed(name) // also moves this thread into it
	if err != nil {
		t.Skipf("cannot create a network namespace: %v", err)
	}
	t.Cleanup(func() { _ = netns.DeleteNamed(name) })
	if err := netns.Set(orig); err != nil {
		t.Fatalf("cannot return to the original namespace: %v", err) // thread stays locked and dies with the test
	}
	runtime.UnlockOSThread()
	ns.Close()
	orig.Close()
	return name
}

func TestPrivilegedLinkNetnsENILink(t *testing.T) {
	name := newTestNetns(t)
	sim, url := startSim(t, Config{InstanceType: "m5.large", LinkNetns: "/var/run/netns/" + name})
	c := ec2Client(t, url, false)
	eni := createENI(t, c, sim, &ec2.CreateNetworkInterfaceInput{})
	attachID := attachENI(t, c, sim, aws.ToString(eni.NetworkInterfaceId), 2)

	ns, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	link, err := h.LinkByName("eth2")
	if err != nil {
		t.Fatalf("no eth2 in the netns after attach: %v", err)
	}
	if (link.Type() != "dummy" && link.Type() != "veth") || link.Attrs().HardwareAddr.String() != aws.ToString(eni.MacAddress) ||
		link.Attrs().Flags&net.FlagUp != 0 {
		t.Fatalf("link: type %s mac %s flags %v", link.Type(), link.Attrs().HardwareAddr, link.Attrs().Flags)
	}

	must[*ec2.DetachNetworkInterfaceOutput](t)(c.DetachNetworkInterface(ctx, &ec2.DetachNetworkInterfaceInput{AttachmentId: aws.String(attachID)}))
	links, err := h.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if l.Attrs().Name != "lo" {
			t.Fatalf("link %s left in the netns after detach", l.Attrs().Name)
		}
	}
}

// An attach with a link delay: the link (and the IMDS entry) come only after
// the delay, in the namespace the test made.
func TestPrivilegedLinkDelayInNetns(t *testing.T) {
	name := newTestNetns(t)
	sim, url := startSim(t, Config{InstanceType: "c6in.32xlarge", LinkNetns: "/var/run/netns/" + name})
	const delay = 2 * time.Second
	sim.SetFaults(Faults{LinkDelay: delay})
	ns, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	byMAC := func(mac string) netlink.Link {
		links, err := h.LinkList()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links {
			if l.Attrs().HardwareAddr.String() == mac {
				return l
			}
		}
		return nil
	}
	c := ec2Client(t, url, false)
	start := time.Now()
	eni := createENI(t, c, sim, &ec2.CreateNetworkInterfaceInput{})
	attachENI(t, c, sim, aws.ToString(eni.NetworkInterfaceId), 1)
	other := must[ENI](t)(sim.AddENI(ENISpec{Card: 1}))
	if time.Since(start) < delay && (byMAC(aws.ToString(eni.MacAddress)) != nil || byMAC(other.MAC) != nil) {
		t.Fatal("a link appeared before the delay")
	}
	waitFor(t, "both links", 60*time.Second, func() bool {
		return byMAC(aws.ToString(eni.MacAddress)) != nil && byMAC(other.MAC) != nil
	})
	if since := time.Since(start); since < delay {
		t.Fatalf("links after %v, before the %v delay", since, delay)
	}
	if l := byMAC(other.MAC); l.Attrs().Name != "c1eth0" {
		t.Errorf("card 1's link is %s", l.Attrs().Name)
	}
	if keys := getMeta(t, imdsClient(url), "network/interfaces/macs/"); !strings.Contains(keys, other.MAC) {
		t.Errorf("IMDS after the link: %q", keys)
	}
	if err := sim.LinkError(); err != nil {
		t.Fatal(err)
	}
}
