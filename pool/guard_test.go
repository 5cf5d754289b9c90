package pool

import (
	"net/netip"
	"reflect"
	"testing"
)

func TestGuardKeepsWhatTheKernelRoutesToRunningPods(t *testing.T) {
	pfx := netip.MustParsePrefix
	ip := netip.MustParseAddr
	block := func(cidr string) Block { return Block{CIDR: pfx(cidr)} }
	snap := Snapshot{ENIs: []ENI{
		{ID: "eni-0", DeviceIndex: 0, Blocks: []Block{block("100.64.0.10/32")}},
		{ID: "eni-1", DeviceIndex: 1, Blocks: []Block{block("100.64.1.10/32"), block("100.64.1.11/32")}},
		{ID: "eni-2", DeviceIndex: 2, Blocks: []Block{block("100.64.2.16/28"), block("100.64.2.32/28")}},
		{ID: "eni-6", DeviceIndex: 3, Blocks: []Block{block("fd00::1:0:0:0/80")}},
	}}
	unassign := func(eni string, blocks ...string) Action {
		a := Action{Kind: Unassign, ENIID: eni, Count: len(blocks)}
		for _, b := range blocks {
			a.Release = append(a.Release, pfx(b))
		}
		return a
	}
	grow := Action{Kind: Assign, ENIID: "eni-0", Count: 2}
	for _, tc := range []struct {
		name    string
		actions []Action
		routed  []RoutedAddr
		want    []Action
		holds   []Hold
	}{{
		name:    "nothing routed: the plan stands",
		actions: []Action{unassign("eni-1", "100.64.1.10/32"), {Kind: DeleteENI, ENIID: "eni-2"}},
		want:    []Action{unassign("eni-1", "100.64.1.10/32"), {Kind: DeleteENI, ENIID: "eni-2"}},
	}, {
		name:    "a routed address is left out of its unassign",
		actions: []Action{unassign("eni-1", "100.64.1.10/32", "100.64.1.11/32")},
		routed:  []RoutedAddr{{ip("100.64.1.11"), "enia"}},
		want:    []Action{unassign("eni-1", "100.64.1.10/32")},
		holds:   []Hold{{ip("100.64.1.11"), "enia", "eni-1", pfx("100.64.1.11/32"), Unassign}},
	}, {
		name:    "an unassign left with nothing goes",
		actions: []Action{unassign("eni-1", "100.64.1.11/32"), grow},
		routed:  []RoutedAddr{{ip("100.64.1.11"), "enia"}},
		want:    []Action{grow},
		holds:   []Hold{{ip("100.64.1.11"), "enia", "eni-1", pfx("100.64.1.11/32"), Unassign}},
	}, {
		name:    "a prefix holding a routed address stays whole",
		actions: []Action{unassign("eni-2", "100.64.2.16/28", "100.64.2.32/28")},
		routed:  []RoutedAddr{{ip("100.64.2.40"), "enib"}},
		want:    []Action{unassign("eni-2", "100.64.2.16/28")},
		holds:   []Hold{{ip("100.64.2.40"), "enib", "eni-2", pfx("100.64.2.32/28"), Unassign}},
	}, {
		name:    "an ENI carrying a routed address is not deleted",
		actions: []Action{{Kind: DeleteENI, ENIID: "eni-2"}, {Kind: DeleteENI, ENIID: "eni-1"}},
		routed:  []RoutedAddr{{ip("100.64.1.10"), "enia"}},
		want:    []Action{{Kind: DeleteENI, ENIID: "eni-2"}},
		holds:   []Hold{{ip("100.64.1.10"), "enia", "eni-1", pfx("100.64.1.10/32"), DeleteENI}},
	}, {
		name:    "an ENI whose prefix holds a routed address is not deleted",
		actions: []Action{{Kind: DeleteENI, ENIID: "eni-2"}},
		routed:  []RoutedAddr{{ip("100.64.2.17"), "enia"}},
		holds:   []Hold{{ip("100.64.2.17"), "enia", "eni-2", pfx("100.64.2.16/28"), DeleteENI}},
	}, {
		name:    "IPv6: a /80 holding a routed /128 stays, and its ENI",
		actions: []Action{unassign("eni-6", "fd00::1:0:0:0/80"), {Kind: DeleteENI, ENIID: "eni-6"}},
		routed:  []RoutedAddr{{ip("fd00::1:0:0:5"), "enic"}},
		holds: []Hold{{ip("fd00::1:0:0:5"), "enic", "eni-6", pfx("fd00::1:0:0:0/80"), Unassign},
			{ip("fd00::1:0:0:5"), "enic", "eni-6", pfx("fd00::1:0:0:0/80"), DeleteENI}},
	}, {
		name:    "an address routed elsewhere changes nothing",
		actions: []Action{unassign("eni-1", "100.64.1.10/32")},
		routed:  []RoutedAddr{{ip("100.64.0.10"), "enia"}, {ip("fd00::9"), "enib"}},
		want:    []Action{unassign("eni-1", "100.64.1.10/32")},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, holds := Guard(tc.actions, snap, tc.routed)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("actions:\n got %+v\nwant %+v", got, tc.want)
			}
			if !reflect.DeepEqual(holds, tc.holds) {
				t.Errorf("holds:\n got %+v\nwant %+v", holds, tc.holds)
			}
		})
	}
}
