package pass

import (
	"fmt"
	"strings"
	"time"

	"vpc-cni/internal/printers"
	"vpc-cni/reconcile"
	"vpc-cni/status"
)

// Summary is the pass in one line, or "" when it changed nothing and has
// nothing to say: the timer runs a pass every 30 s, and five table lines
// per pass made ~14,000 journal lines a day on a node at rest.
func Summary(rep *reconcile.Report) string {
	if rep == nil || !acted(rep) {
		return ""
	}
	var parts []string
	for _, a := range rep.Plan.Actions {
		parts = append(parts, status.DescribeAction(a))
	}
	for _, f := range rep.Findings {
		parts = append(parts, f.Message)
	}
	for _, f := range rep.Failed {
		parts = append(parts, "FAILED "+f)
	}
	f := rep.Plan.Figures
	return fmt.Sprintf("reconcile: %s; EC2 calls %s; pool %d free, %d assigned, %d total; took %s",
		strings.Join(parts, "; "), printers.CountCalls(rep.Calls), f.Free, f.Assigned, f.Total, rep.Duration.Round(time.Millisecond))
}

// acted reports whether a pass changed anything or has something to say.
func acted(rep *reconcile.Report) bool {
	return len(rep.Findings) > 0 || len(rep.Failed) > 0 || mutated(rep)
}

// mutated says whether the pass made an EC2 call that changes something.
func mutated(rep *reconcile.Report) bool {
	for _, c := range rep.Calls {
		if !strings.HasPrefix(c, "Describe") {
			return true
		}
	}
	return false
}

// changeKinds are the findings that record a change to the node's state;
// the others (kept, provisioning off, no prefix delegation) say what stayed.
var changeKinds = map[string]bool{"adopted-block": true, "adopted-eni": true, "dropped-block": true, "dropped-eni": true,
	"ipv6-prefix-repaired": true, "leaked-eni": true, "lost-assignment": true}

// Changed says whether the pass changed the node: an EC2 call that
// mutates, or a finding of a change. A failure (host setup on an ENI with
// no link yet) is reported, not counted as a change.
func Changed(rep *reconcile.Report) bool {
	for _, f := range rep.Findings {
		if changeKinds[f.Kind] {
			return true
		}
	}
	return mutated(rep)
}
