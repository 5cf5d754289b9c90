package reconcile

import "vpc-cni/hostnet"

// EnsureNodeRules has nothing to keep for readyHost (helpers_test.go): the
// node-level rules are hostnet's and the e2e tests' to check.
func (readyHost) EnsureNodeRules(hostnet.Config) ([]string, error) { return nil, nil }
