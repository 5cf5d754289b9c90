package reconcile

import (
	"vpc-cni/hostnet"
	"vpc-cni/netns"
)

// PrimaryLink: a test's host has no primary link, so passes leave the
// node-level rules alone, as they do in a namespace without the primary MAC.
func (readyHost) PrimaryLink(string) (string, error) { return "", nil }

// EnsureNodeRules has nothing to keep for readyHost (helpers_test.go): the
// node-level rules are hostnet's and the e2e tests' to check.
func (readyHost) EnsureNodeRules(hostnet.Config) ([]string, error) { return nil, nil }

// ListPods: readyHost's node runs no pods (podsHost does).
func (readyHost) ListPods(string) (netns.HostState, error) { return netns.HostState{}, nil }
