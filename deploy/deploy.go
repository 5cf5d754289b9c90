// Package deploy holds the files an installed node runs with, so that
// `vpcctl install` writes exactly what this directory ships and the two
// cannot drift. Embedded text costs the plugin no start-up work.
package deploy

import _ "embed"

// Service and Timer are the systemd units that run `vpcctl reconcile`.
//
//go:embed vpc-cni-reconcile.service
var Service string

//go:embed vpc-cni-reconcile.timer
var Timer string

// MaxPodsService writes the kubelet's maxPods drop-in at boot, before the
// kubelet starts (`vpcctl max-pods --write-kubelet-dropin`).
//
//go:embed vpc-cni-max-pods.service
var MaxPodsService string

// ConfigExample is the commented configuration file: every knob, none set.
//
//go:embed config.example
var ConfigExample string

// BashCompletion is `vpcctl completion bash`'s script (zsh runs it too).
//
//go:embed vpcctl.bash
var BashCompletion string

// IAMPolicy is the node role's policy: exactly the EC2 actions the code
// calls (a test holds it to the code), grouped in statements.
//
//go:embed iam-policy.json
var IAMPolicy string
