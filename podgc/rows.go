package podgc

import "vpc-cni/internal/printers"

// Rows is the report's table; dryRun says what would be removed.
func (rep Report) Rows(t *printers.Table, dryRun bool) {
	verb := "REMOVED"
	if dryRun {
		verb = "WOULD REMOVE"
	}
	if len(rep.Released) == 0 && len(rep.Leftovers) == 0 {
		t.Row("GC", "nothing to collect")
	}
	for _, r := range rep.Released {
		t.Row(verb, "assignment "+r)
	}
	for _, l := range rep.Leftovers {
		t.Row(verb, l)
	}
	for _, u := range rep.Unowned {
		t.Row("KEPT", u+": a running pod's, with no assignment (vpcctl state rebuild restores it)")
	}
	for _, f := range rep.Failed {
		t.Row("FAILED", f)
	}
}
