package plugin

import (
	"context"
	"fmt"
	"time"

	"github.com/containernetworking/cni/pkg/types"

	"vpc-cni/npa"
	"vpc-cni/store"
)

// policyMode is NETWORK_POLICY_ENFORCING_MODE as resolved: standard or
// strict, "" when policy is off (or the knobs are bad: DEL then skips the
// agent, and ADD has already failed on them).
func (c *call) policyMode() string { return c.wiringKnobs().NetworkPolicyMode }

// refuseDelegatedPolicy: as an IPAM delegate the interface plugin names the
// host veth, and the agent finds a pod only by the reference's name.
func (c *call) refuseDelegatedPolicy() error {
	if c.cfg.Delegate && c.policyMode() != "" {
		return invalid("%s=%s needs vpc-cni as the interface plugin: the policy agent finds a pod by its eni host veth, "+
			"which another plugin does not make", "NETWORK_POLICY_ENFORCING_MODE", c.policyMode())
	}
	return nil
}

// enforcePolicy asks the agent to program the wired pod's host veth
// (EnforceNpToPod) when the mode is on. aws-cni gives the call no deadline;
// here it has half of what is left of the ADD's, so the other half remains
// to give back what the ADD took. An agent that is away (restarting with
// its DaemonSet) is waited for during two thirds of that half, so a rolling
// upgrade does not fail the pods started meanwhile; one that answers with
// an error fails the ADD at once.
func (c *call) enforcePolicy() error {
	mode := c.policyMode()
	if mode == "" {
		return nil
	}
	budget := halfLeft(c.ctx)
	ctx, cancel := context.WithTimeout(c.ctx, budget)
	defer cancel()
	agent := c.agent()
	agent.Wait = budget * 2 / 3
	agent.OnWait = func(err error) {
		c.log.Warn("waiting for the network policy agent", "socket", c.cfg.PolicyAgentSocket, "for", agent.Wait.Round(time.Millisecond), "err", err)
	}
	req := npa.EnforceRequest{PodName: c.pod.Name, PodNamespace: c.pod.Namespace, Mode: mode, InterfaceCount: 1}
	if err := agent.Enforce(ctx, req); err != nil {
		return types.NewError(types.ErrInternal, fmt.Sprintf("the network policy agent (%s) did not program pod %s/%s: %v",
			c.cfg.PolicyAgentSocket, c.pod.Namespace, c.pod.Name, err), "")
	}
	c.log.Info("network policy agent programmed the pod", "mode", mode, "socket", c.cfg.PolicyAgentSocket)
	return nil
}

// forgetPolicy tells the agent the pod is gone (DeletePodNp) when the mode
// is on. DEL succeeds whatever the agent says, or when it is not there.
func (c *call) forgetPolicy() {
	if c.policyMode() == "" || c.pod.Name == "" {
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, halfLeft(c.ctx))
	defer cancel()
	err := c.agent().Delete(ctx, npa.DeleteRequest{PodName: c.pod.Name, PodNamespace: c.pod.Namespace})
	if err != nil {
		c.log.Warn("the network policy agent was not told of the DEL (the DEL goes on)", "socket", c.cfg.PolicyAgentSocket, "err", err)
		return
	}
	c.log.Info("network policy agent forgot the pod", "socket", c.cfg.PolicyAgentSocket)
}

func (c *call) agent() npa.Client { return npa.Client{Socket: c.cfg.PolicyAgentSocket} }

// halfLeft is half the time before ctx's deadline.
func halfLeft(ctx context.Context) time.Duration {
	d, ok := ctx.Deadline()
	if !ok {
		return npa.DialTimeout
	}
	return time.Until(d) / 2
}

// undoWired gives back all a wired ADD took when a later step fails: the
// wiring (veth, routes, rules), then the address. A teardown that fails
// keeps the address, so GC finds both later.
func (c *call) undoWired(a store.Assignment) {
	if err := c.host.TeardownPod(c.podWiring(a)); err != nil {
		c.log.Error("removing the wiring of a failed ADD; the address stays taken until GC", "err", err)
		return
	}
	c.giveBack(a)
}
