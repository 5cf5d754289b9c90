package commands

import (
	"vpc-cni/install"
	"vpc-cni/status"
	"vpc-cni/store"
)

// The CLI tests decode `pool status -o json` with the contract's own types.
type (
	PoolStatus = status.PoolStatus
	PodStatus  = status.PodStatus
)

// EventView and PodRef decode `events -o json` as a script would, with
// types of their own (the fields of status.EventView and status.PodRef).
type (
	EventView struct {
		store.Event
		Pods []PodRef `json:"pods,omitempty"`
	}
	PodRef struct {
		Pod         string `json:"pod"`
		ContainerID string `json:"containerId"`
		IfName      string `json:"ifName"`
	}
)

// What the systemd tests check the shipped units against.
const (
	cliPath     = install.CLIPath
	serviceName = install.ServiceName
	timerName   = install.TimerName
	// The boot unit that writes the kubelet's maxPods drop-in.
	maxPodsServiceName = install.MaxPodsServiceName
)
