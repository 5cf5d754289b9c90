package settings

import (
	"fmt"
	"strconv"
	"strings"
)

// The node's client-side EC2 budget, shared by every vpc-cni process through
// the state file: calls per second (the bucket holds ten seconds' worth).
const (
	EC2DescribeRate = "VPC_CNI_EC2_DESCRIBE_RATE"
	EC2MutatingRate = "VPC_CNI_EC2_MUTATING_RATE"
)

// Budget is one bucket: Rate calls per second, Burst calls at once. Zero
// means "the cloud package's default".
type Budget struct{ Rate, Burst float64 }

// EC2Budgets reads both rates; a bad value names its variable.
func EC2Budgets(env Lookup) (describe, mutating Budget, err error) {
	if describe, err = budget(env, EC2DescribeRate); err != nil {
		return
	}
	mutating, err = budget(env, EC2MutatingRate)
	return
}

func budget(env Lookup, name string) (Budget, error) {
	if env == nil {
		return Budget{}, nil
	}
	text, ok := env(name)
	if !ok || strings.TrimSpace(text) == "" {
		return Budget{}, nil
	}
	r, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
	if err != nil || r <= 0 || r > 1000 {
		return Budget{}, fmt.Errorf("%s=%q: must be a number of calls per second in (0, 1000]", name, text)
	}
	return Budget{Rate: r, Burst: max(10*r, 1)}, nil
}
