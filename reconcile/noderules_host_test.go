package reconcile

import "vpc-cni/hostnet"

// PrimaryLink: a test's host has no primary link, so passes leave the
// node-level rules alone, as they do in a namespace without the primary MAC.
func (readyHost) PrimaryLink(string) (string, error) { return "", nil }

// EnsureNodeRules has nothing to keep for readyHost (helpers_test.go): the
// node-level rules are hostnet's and the e2e tests' to check.
func (readyHost) EnsureNodeRules(hostnet.Config) ([]string, error) { return nil, nil }
