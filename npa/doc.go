// Package npa speaks to the reference's network policy agent
// (aws/aws-network-policy-agent) as aws-cni and ipamd do: the plugin's
// EnforceNpToPod and DeletePodNp on the agent's socket, and the answer to
// the agent's start-up question GetNetworkPolicyConfigs on ipamd's socket.
//
// It speaks gRPC's wire itself (HTTP/2 over a unix socket, length-prefixed
// protobuf messages, the status in trailers) rather than linking grpc-go:
// the plugin is a fresh process per pod, and every package it links costs
// start-up (docs/design.md, performance). The messages and method paths are
// the reference's rpc/rpc.proto; the e2e tests check them against its
// generated stubs.
package npa

// The agent's enforcing modes; any other value is refused by the agent.
const (
	ModeStandard = "standard"
	ModeStrict   = "strict"
)

// The reference's sockets.
const (
	// AgentSocket is where the agent serves NPBackend.
	AgentSocket = "/var/run/aws-node/npa.sock"
	// ConfigSocket is where ipamd serves ConfigServerBackend; the agent
	// asks it at start-up.
	ConfigSocket = "/var/run/aws-node/ipamd.sock"
)

// Method paths of rpc/rpc.proto (package rpc).
const (
	pathEnforce = "/rpc.NPBackend/EnforceNpToPod"
	pathDelete  = "/rpc.NPBackend/DeletePodNp"
	pathConfig  = "/rpc.ConfigServerBackend/GetNetworkPolicyConfigs"
)
