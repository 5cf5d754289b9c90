package netns

import (
	"fmt"
	"sync"
	"testing"

	"github.com/containernetworking/plugins/pkg/ns"
)

// Plugin processes for different pods run at once; each one's listings of
// rules and routes may be interrupted by the others' changes.
func TestPrivilegedConcurrentSetupAndTeardown(t *testing.T) {
	node := newNode(t)
	const n = 12
	pods := make([]Pod, n)
	for i := range pods {
		_, pods[i] = newPod(t, fmt.Sprint("pod", i), fmt.Sprintf("100.64.6.%d", 10+i), i%3*2)
	}
	each := func(fn func(Pod) error) {
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i, p := range pods {
			wg.Go(func() { errs[i] = node.Do(func(ns.NetNS) error { return fn(p) }) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("pod %d: %v", i, err)
			}
		}
	}
	each(func(p Pod) error { _, err := SetupPod(p); return err })
	each(CheckPod)
	st := listHost(t, node)
	if len(st.Veths) != n || len(st.Routes) != n || len(st.Rules) != n+n*2/3 {
		t.Fatalf("after %d concurrent setups: %d veths, %d routes, %d rules", n, len(st.Veths), len(st.Routes), len(st.Rules))
	}
	each(TeardownPod)
	if st := listHost(t, node); len(st.Veths)+len(st.Routes)+len(st.Rules) != 0 {
		t.Fatalf("after concurrent teardowns: %+v", st)
	}
}
