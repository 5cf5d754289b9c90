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
	text, ok, err := checked(in, name)
	if !ok || err != nil {
		return Budget{}, err
	}
	r, _ := strconv.ParseFloat(text, 64)
	return Budget{Rate: r, Burst: max(10*r, 1)}, nil
}

// DefaultEC2Rate is the cloud client's default budget, in calls per second
// (cloud.DefaultDescribeBudget and DefaultMutatingBudget; a test holds them
// equal).
const DefaultEC2Rate = "2"
