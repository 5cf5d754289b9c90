//go:build tools

// Package e2e holds the end-to-end tests. This file only pins the reference
// plugins the tests build (go build of these packages), so that go mod tidy
// keeps their dependencies in go.mod and go.sum.
package e2e

import (
	_ "github.com/containernetworking/cni/libcni"
	_ "github.com/containernetworking/plugins/plugins/ipam/host-local"
	_ "github.com/containernetworking/plugins/plugins/main/bridge"
	_ "github.com/containernetworking/plugins/plugins/main/loopback"
	_ "github.com/containernetworking/plugins/plugins/main/ptp"
	_ "github.com/containernetworking/plugins/plugins/meta/bandwidth"
	_ "github.com/containernetworking/plugins/plugins/meta/portmap"
	_ "github.com/containernetworking/plugins/plugins/meta/sbr"
	_ "github.com/containernetworking/plugins/plugins/meta/tuning"
)
