package reconcile

import (
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"vpc-cni/cloud"
	"vpc-cni/pool"
	"vpc-cni/store"
)

// Every EC2 action's event names its ENI (the new ENI's ID for a create),
// its addresses or prefixes, the reason and the outcome.
func TestActionEventsAreComplete(t *testing.T) {
	n := newNode(t, "t3.small", env{"WARM_IP_TARGET": "5"}) // 3 per ENI: the primary fills, a second ENI is created
	n.converge(5)
	var events []store.Event
	if err := n.st.View(func(tx *store.Tx) (err error) { events, err = tx.Events(0); return err }); err != nil {
		t.Fatal(err)
	}
	snap := n.snapshot()
	if len(snap.ENIs) < 2 {
		t.Fatalf("no secondary ENI: %s", n.storeSummary())
	}
	created := snap.ENIs[1]
	var sawCreate, sawAssign bool
	for _, e := range events {
		switch e.Kind {
		case string(pool.CreateENI):
			sawCreate = true
			for _, want := range []string{created.ID, created.Blocks[0].CIDR.Addr().String(), "reason: ", "outcome: ok"} {
				if !strings.Contains(e.Message, want) {
					t.Errorf("create-eni event %q lacks %q", e.Message, want)
				}
			}
		case string(pool.Assign):
			sawAssign = true
			if !strings.Contains(e.Message, snap.ENIs[0].ID) || !strings.Contains(e.Message, "100.64.") ||
				!strings.Contains(e.Message, "outcome: ok") {
				t.Errorf("assign event %q lacks the ENI, the addresses or the outcome", e.Message)
			}
		}
	}
	if !sawCreate || !sawAssign {
		t.Errorf("events %+v: want a create-eni and an assign", events)
	}
}

// A failed action says so, with what was asked; counts are singular or plural.
func TestActionEventWording(t *testing.T) {
	fail := result{step: step{Action: pool.Action{Kind: pool.CreateENI, DeviceIndex: 1, Count: 1, Reason: "shortfall 1"}},
		Err: errors.New("throttled")}
	if got := actionEvent(fail); got != "create-eni (none created): device 1, asked for 1 address; reason: shortfall 1; outcome: failed: throttled" {
		t.Errorf("failed create: %q", got)
	}
	ok := result{step: step{Action: pool.Action{Kind: pool.Assign, ENIID: "eni-1", Count: 2, Reason: "r"}}, Done: true,
		Blocks: []netip.Prefix{netip.MustParsePrefix("100.64.0.5/32"), netip.MustParsePrefix("100.64.0.16/28")}}
	if got := actionEvent(ok); got != "assign eni-1: 1 address (100.64.0.5) and 1 /28 prefix (100.64.0.16/28); reason: r; outcome: ok" {
		t.Errorf("assign: %q", got)
	}
	made := result{step: step{Action: pool.Action{Kind: pool.CreateENI, Reason: "r"}}, Done: true,
		Created: &cloud.ENIInfo{ID: "eni-new", DeviceIndex: 2, Secondary: []netip.Addr{netip.MustParseAddr("100.64.0.7"), netip.MustParseAddr("100.64.0.8")}}}
	if got := actionEvent(made); !strings.HasPrefix(got, "create-eni eni-new: device 2, 2 addresses (100.64.0.7, 100.64.0.8)") {
		t.Errorf("create: %q", got)
	}
}

// The report's JSON: durations as strings, no zero times, no null lists.
func TestReportJSON(t *testing.T) {
	n := newNode(t, "t3.small", env{"WARM_IP_TARGET": "1"})
	n.converge(5)
	b, err := json.Marshal(n.pass())
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, bad := range []string{"null", "0001-01-01", `"Kind"`, `"Duration":`} {
		if strings.Contains(s, bad) {
			t.Errorf("report JSON has %s: %s", bad, s)
		}
	}
	var v struct {
		Duration string
		Config   struct {
			EC2Resync string `json:"ec2ResyncInterval"`
		}
	}
	if err := json.Unmarshal(b, &v); err != nil || !strings.HasSuffix(v.Duration, "s") {
		t.Errorf("duration %q (%v), want a string such as \"12ms\"", v.Duration, err)
	}
	if v.Config.EC2Resync != "15m0s" {
		t.Errorf("config.ec2ResyncInterval %q, want the default as a duration string \"15m0s\"", v.Config.EC2Resync)
	}
}
