package settings

import "strconv"

// The node's client-side EC2 budget, shared by every vpc-cni process through
// the state file: calls per second (the bucket holds ten seconds' worth).
const (
	EC2DescribeRate = "VPC_CNI_EC2_DESCRIBE_RATE"
	EC2MutatingRate = "VPC_CNI_EC2_MUTATING_RATE"
)

// Budget is one bucket: Rate calls per second, Burst calls at once. Zero
// means "the cloud package's default".
type Budget struct{ Rate, Burst float64 }

// EC2Budgets reads both rates (environment, then file); a bad value names
// its variable and where it was set.
func EC2Budgets(in Inputs) (describe, mutating Budget, err error) {
	if describe, err = budget(in, EC2DescribeRate); err != nil {
		return
	}
	mutating, err = budget(in, EC2MutatingRate)
	return
}

func budget(in Inputs, name string) (Budget, error) {
	text, v, ok := in.Lookup(name)
	if !ok {
		return Budget{}, nil
	}
	r, err := strconv.ParseFloat(text, 64)
	if err != nil || r <= 0 || r > 1000 {
		return Budget{}, bad(v, text, "must be a number of calls per second in (0, 1000]")
	}
	return Budget{Rate: r, Burst: max(10*r, 1)}, nil
}
