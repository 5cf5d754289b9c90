package status

import (
	"bytes"
	"strings"
	"testing"

	"vpc-cni/internal/printers"
	"vpc-cni/store"
)

// Each ENI left alone is one NOT OURS row of the table, not two.
func TestTableListsEachNotOursENIOnce(t *testing.T) {
	s := PoolStatus{Node: &NodeStatus{Node: store.Node{InstanceID: "i-1"}},
		NotOurs: []NotOursStatus{{ID: "eni-trunk", DeviceIndex: 2, Reason: "trunk", ENISlots: 1}}}
	var out bytes.Buffer
	if err := printers.Render(&out, "table", false, s, func(tab *printers.Table) { Table(tab, s) }); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "NOT OURS"); n != 1 {
		t.Errorf("%d NOT OURS rows for one ENI left alone:\n%s", n, out.String())
	}
}
