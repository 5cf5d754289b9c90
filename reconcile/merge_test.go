package reconcile

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"vpc-cni/pool"
	"vpc-cni/store"
)

// rawEC2 is an SDK client on the emulator, to change EC2 behind the store's back.
func rawEC2(t testing.TB) *ec2.Client {
	t.Helper()
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ec2.NewFromConfig(cfg)
}

// EC2 is the truth for addresses: what it has and the store lacks is
// adopted as free; what the store has and EC2 lacks is dropped, and an
// assigned one is reported.
func TestMergeAdoptsAndDrops(t *testing.T) {
	n := newNode(t, "t3.small", env{"WARM_IP_TARGET": "1", "MINIMUM_IP_TARGET": "1"})
	n.converge(5)
	pod, err := n.addPod()
	if err != nil {
		t.Fatal(err)
	}
	primary := n.snapshot().ENIs[0]
	api, ctx := rawEC2(t), ctxFor(t)
	// Behind the store's back: assign a new address to the primary ENI, and
	// take the pod's address away (in that order, or EC2 hands it out again).
	out, err := api.AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{
		NetworkInterfaceId: aws.String(primary.ID), SecondaryPrivateIpAddressCount: aws.Int32(1)})
	if err != nil {
		t.Fatal(err)
	}
	extra := netip.MustParseAddr(aws.ToString(out.AssignedPrivateIpAddresses[0].PrivateIpAddress))
	if _, err := api.UnassignPrivateIpAddresses(ctx, &ec2.UnassignPrivateIpAddressesInput{
		NetworkInterfaceId: aws.String(primary.ID), PrivateIpAddresses: []string{pod.IP.String()}}); err != nil {
		t.Fatal(err)
	}

	rep := n.pass()
	kinds := map[string]string{}
	for _, f := range rep.Findings {
		kinds[f.Kind] = f.Message
	}
	for _, want := range []string{"adopted-block", "dropped-block", "lost-assignment"} {
		if kinds[want] == "" {
			t.Errorf("no %s finding; findings %+v", want, rep.Findings)
		}
	}
	if !strings.Contains(kinds["lost-assignment"], pod.IP.String()) || !strings.Contains(kinds["lost-assignment"], pod.Key) {
		t.Errorf("lost-assignment finding %q does not name %s and %s", kinds["lost-assignment"], pod.IP, pod.Key)
	}
	if st, ok := addrState(n.snapshot(), extra); !ok || st != pool.Free {
		t.Errorf("adopted %s: state %q (present %v), want free", extra, st, ok)
	}
	if _, ok := addrState(n.snapshot(), pod.IP); ok {
		t.Errorf("%s still in the store after EC2 dropped it", pod.IP)
	}
	var events []store.Event
	_ = n.st.View(func(tx *store.Tx) (err error) { events, err = tx.Events(100); return err })
	if !hasEvent(events, "lost-assignment", pod.IP.String()) || !hasEvent(events, "adopted-block", extra.String()) {
		t.Errorf("store events lack the findings: %+v", events)
	}
}

func addrState(snap pool.Snapshot, ip netip.Addr) (pool.State, bool) {
	for _, e := range snap.ENIs {
		for _, b := range e.Blocks {
			for _, a := range b.Addrs {
				if a.IP == ip {
					return a.State, true
				}
			}
		}
	}
	return "", false
}

func hasEvent(events []store.Event, kind, text string) bool {
	for _, e := range events {
		if e.Kind == kind && strings.Contains(e.Message, text) {
			return true
		}
	}
	return false
}
