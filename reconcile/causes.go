package reconcile

import (
	"context"
	"errors"
	"slices"

	"vpc-cni/cloud"
	"vpc-cni/settings"
)

// FailureCause is one name a failed pass's cause can take (store's
// ReconcileReport.Cause, `pool status`, doctor, events): what it means and
// what to do. This table is the one owner of that vocabulary; doctor and
// the operating guide read it.
type FailureCause struct {
	Name    string `json:"name"`
	Meaning string `json:"meaning"`
	Action  string `json:"action"`
}

// The causes a pass that is not EC2's or IMDS's failure can have.
const (
	CauseIdentity = "identity" // EC2's answer contradicts the node (IdentityError)
	CauseConfig   = "config"   // a bad configuration value (ConfigError)
	CauseLock     = "lock"     // the reconcile lock was held past the wait (ErrLockHeld)
)

// ErrLockHeld is a pass that did not run because another reconcile held the
// lock for all of its wait.
var ErrLockHeld = errors.New("another reconcile held the lock")

// causes is the table, in the order the operating guide lists them. Every
// name Cause can return is here (TestCausesCoverEveryCause).
var causes = []FailureCause{
	{cloud.KindNoCredentials.String(), "no usable AWS credentials: the error names the source and why it failed " +
		"(a token expired, for another audience or missing; a role STS refused)",
		"check that source, the instance role (IMDS) or the AWS_* variables of the unit or pod; the plugin uses " +
			"the vpc-cni pod's handed-off token (docs/credentials.md)"},
	{cloud.KindUnreachable.String(), "the EC2 or IMDS endpoint did not answer",
		"check AWS_REGION, AWS_ENDPOINT_URL_EC2, proxies and the route to EC2"},
	{cloud.KindThrottled.String(), "EC2 throttled the account or the node's rate budget ran out",
		"passes back off and retry; lower " + settings.EC2DescribeRate + "/" + settings.EC2MutatingRate + " on busy accounts"},
	{cloud.KindUnauthorized.String(), "the IAM policy lacks the action named in the error",
		"add it to the node's instance role (deploy/iam-policy.json); `vpcctl doctor --iam` lists every action the " +
			"configuration needs that the role lacks"},
	{cloud.KindTimeout.String(), "the pass ran out of --timeout before EC2 answered",
		"check the endpoint, or raise --timeout"},
	{CauseIdentity, "EC2's answer contradicts the node: a wrong region, another account's credentials, an endpoint " +
		"that does not know the instance, or a state dir copied from another node; nothing was changed",
		"check AWS_REGION and AWS_DEFAULT_REGION, AWS_PROFILE and AWS_ACCESS_KEY_ID, AWS_ENDPOINT_URL_EC2, and that the state dir is this node's"},
	{cloud.KindSubnetFull.String(), "the subnet has no free addresses",
		"growth backs off; free addresses, add subnet space, or tag more subnets for subnet discovery"},
	{cloud.KindNoFreePrefix.String(), "the subnet has addresses but no free aligned /28",
		"growth uses single addresses for a while; free /28s or add subnet space"},
	{cloud.KindLimit.String(), "an instance-type limit was hit (ENIs or addresses per ENI)",
		"the next pass re-reads EC2; lower the targets or MAX_ENI if it persists"},
	{CauseConfig, "a bad configuration value", "fix the variable named in the error, in the file or the environment"},
	{CauseLock, "another reconcile held the reconcile lock for all of --timeout, so this pass did not run",
		"nothing if passes succeed after it; otherwise see which process holds the lock (the error names the file) and why its pass is slow"},
	{cloud.KindNotFound.String(), "a resource the pass named does not exist in EC2 (an ENI, subnet or instance)",
		"check the subnet and security group IDs in the configuration; see 'vpcctl events'"},
	{cloud.KindInUse.String(), "an ENI was still in use (a detach still completing)", "nothing: the next pass tries again"},
	{cloud.KindOther.String(), "anything else", "see 'vpcctl events' for what the pass did before it failed"},
}

// Causes lists every failure cause with its meaning and what to do (a copy).
func Causes() []FailureCause { return append([]FailureCause(nil), causes...) }

// CauseOf looks a cause up by name; an unknown name (a newer binary's) gets
// the "other" entry and false.
func CauseOf(name string) (FailureCause, bool) {
	for _, c := range causes {
		if c.Name == name {
			return c, true
		}
	}
	other, _ := CauseOf(cloud.KindOther.String())
	return other, false
}

// Cause names what a failed pass's error means, for doctor and status: a
// cloud.Kind's name, CauseIdentity or CauseConfig; always a name in Causes.
func Cause(err error) string {
	var ce *cloud.Error
	switch {
	case IsIdentityError(err):
		return CauseIdentity
	case IsConfigError(err):
		return CauseConfig
	case errors.Is(err, ErrLockHeld):
		return CauseLock
	case errors.As(err, &ce):
		return ce.Kind.String()
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return cloud.KindTimeout.String()
	}
	return cloud.KindOther.String()
}

// growthRefusals are the causes EC2 gives a pass's grow again on the next
// try, whatever the timing: only the operator (or freed space) ends them.
var growthRefusals = []string{cloud.KindUnauthorized.String(), cloud.KindSubnetFull.String(), cloud.KindLimit.String()}

// RefusesGrowth reports whether a pass that failed for cause could not have
// grown the pool and the next one will not either (STATUS of a node that
// holds no pod address reads it).
func RefusesGrowth(cause string) bool { return slices.Contains(growthRefusals, cause) }
