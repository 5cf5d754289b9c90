package reconcile

import (
	"errors"
	"testing"

	"vpc-cni/store"
)

// Whether the instance can hold /28 prefixes is a node fact a pass learns
// and stores, so the ADD's take reads it instead of judging the hypervisor;
// a store written before the fact existed gets it at the next pass.
func TestAPassStoresWhetherTheInstanceHoldsPrefixes(t *testing.T) {
	for _, c := range []struct {
		instanceType string
		want         bool
	}{{"t3.medium", true}, {"m4.large", false}} {
		n := newNode(t, c.instanceType, env{"ENABLE_PREFIX_DELEGATION": "true"})
		n.pass()
		if got := storedNode(t, n).PrefixCapable; got != c.want {
			t.Errorf("%s: prefix capable %v after the first pass, want %v", c.instanceType, got, c.want)
		}
		err := n.st.Update(func(tx *store.Tx) error {
			node, _, err := tx.Node()
			node.PrefixCapable = false // as an older store has it: absent
			return errors.Join(err, tx.PutNode(node))
		})
		if err != nil {
			t.Fatal(err)
		}
		n.pass()
		if got := storedNode(t, n).PrefixCapable; got != c.want {
			t.Errorf("%s: prefix capable %v after a pass over an older store, want %v", c.instanceType, got, c.want)
		}
	}
}

func storedNode(t *testing.T, n *node) store.Node {
	t.Helper()
	var node store.Node
	if err := n.st.View(func(tx *store.Tx) (err error) { node, _, err = tx.Node(); return err }); err != nil {
		t.Fatal(err)
	}
	return node
}
