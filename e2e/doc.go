// Package e2e holds the end-to-end tests and benchmarks of the CNI plugin:
// the real binary, run by libcni or exec'd like a runtime would, against the
// EC2 emulator, in network namespaces the tests make (a "node" namespace
// standing in for the host and one namespace per pod), next to the reference
// plugins of github.com/containernetworking/plugins. Everything is in the
// _test.go files; they need root and skip without it.
package e2e
