package settings

import "strings"

// Knobs that are read where they act (the EC2 budget by the cloud client,
// the node rules by hostnet) rather than resolved into Effective: Values
// still carries each one with its source, so `pool status` shows every knob
// and a command can say where its environment differs from the last pass.
var shownElsewhere = []struct{ name, def string }{
	{EC2DescribeRate, DefaultEC2Rate},
	{EC2MutatingRate, DefaultEC2Rate},
	{ExternalSNAT, "false"},
	{ExcludeSNATCIDRs, ""},
	{RandomizeSNAT, "prng"},
	{NodePortSupport, "true"},
	{ConnMark, "0x80"},
}

// DefaultEC2Rate is the cloud client's default budget, in calls per second
// (cloud.DefaultDescribeBudget and DefaultMutatingBudget; a test holds them
// equal).
const DefaultEC2Rate = "2"

// shown records the knobs of shownElsewhere as given; their own readers
// (EC2Budgets, NodeNetwork) judge the values.
func (r *resolver) shown(*Effective) error {
	for _, k := range shownElsewhere {
		text, v, ok := r.in.Lookup(k.name)
		if !ok {
			text = k.def
		}
		r.note(v, strings.TrimSpace(text))
	}
	return nil
}
