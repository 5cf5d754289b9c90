// Package iamcheck is `vpcctl doctor --iam`: whether the node's role allows
// every EC2 action its configuration needs, one authorization check each
// (DryRun=true, or a probe EC2 refuses without a change), before a roll.
// deploy/iam-policy.json is the list of actions (a test holds it to the
// code); the configuration only leaves some out.
package iamcheck

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"vpc-cni/cloud"
	"vpc-cni/deploy"
	"vpc-cni/settings"
)

// Cloud is what the IAM check needs of cloud.Client: the node's identity
// and attachments from IMDS, one read of the primary ENI (its attachment
// ID), and the authorization checks.
type Cloud interface {
	Identity(ctx context.Context) (cloud.Identity, error)
	AttachedInterfaces(ctx context.Context) ([]cloud.IMDSInterface, error)
	ENIByID(ctx context.Context, id string) (cloud.ENIInfo, error)
	DryRun(ctx context.Context, action string, t cloud.DryRunTarget) error
}

// Check is the verdict on one EC2 action.
type Check struct {
	Action    string `json:"action"`    // "ec2:CreateNetworkInterface"
	Result    string `json:"result"`    // allowed, denied, or error (EC2 gave no verdict)
	Method    string `json:"method"`    // dry-run, or probe (EC2 has no DryRun for the action)
	Statement string `json:"statement"` // the Sid of deploy/iam-policy.json's statement that allows it
	Detail    string `json:"detail,omitempty"`
}

// Results of an Check.
const (
	Allowed = "allowed"
	Denied  = "denied"
	Failed  = "error"
)

// Report is every action the configuration needs, checked.
type Report struct {
	Checks []Check `json:"checks"`
	// Calls counts the EC2 requests made: one per action, plus the read of
	// the primary ENI's attachment when DetachNetworkInterface is checked.
	Calls int `json:"ec2Calls"`
	// Add is the policy to attach for what was denied (nil when nothing was).
	Add *Policy `json:"add,omitempty"`
}

// OK reports whether every action was allowed.
func (r Report) OK() bool {
	return !slices.ContainsFunc(r.Checks, func(c Check) bool { return c.Result != Allowed })
}

// Missing names the actions not allowed, for one-line errors.
func (r Report) Missing() []string {
	var out []string
	for _, c := range r.Checks {
		if c.Result != Allowed {
			out = append(out, c.Action+" ("+c.Result+")")
		}
	}
	return out
}

// Policy is an IAM policy document, as deploy/iam-policy.json is written.
type Policy struct {
	Version   string      `json:"Version"`
	Statement []Statement `json:"Statement"`
}

// Statement is one statement of a Policy.
type Statement struct {
	Sid      string   `json:"Sid"`
	Effect   string   `json:"Effect"`
	Action   []string `json:"Action"`
	Resource string   `json:"Resource"`
}

// ShippedPolicy is deploy/iam-policy.json.
func ShippedPolicy() (Policy, error) {
	var p Policy
	if err := json.Unmarshal([]byte(deploy.IAMPolicy), &p); err != nil {
		return Policy{}, fmt.Errorf("the shipped IAM policy: %w", err)
	}
	return p, nil
}

// NeededActions lists the shipped policy's actions that cfg makes the node
// call ("ec2:..."), in the policy's order: the policy is the one list of
// what the code calls; the configuration only leaves some out.
func NeededActions(p Policy, cfg settings.Effective) []string {
	var out []string
	for _, s := range p.Statement {
		for _, a := range s.Action {
			if needed(strings.TrimPrefix(a, "ec2:"), cfg) {
				out = append(out, a)
			}
		}
	}
	return out
}

// needed says whether cfg makes the node call the EC2 action.
func needed(action string, cfg settings.Effective) bool {
	switch {
	case cfg.IMDSOnly:
		return false // no EC2 call at all
	case cfg.DisableProvisioning && !strings.HasPrefix(action, "Describe"):
		return false
	case action == "DescribeSecurityGroups":
		return slices.ContainsFunc(cfg.Profiles, func(p settings.Profile) bool { return p.Allowed && p.GroupsByTag() })
	case action == "AssignIpv6Addresses" || action == "UnassignIpv6Addresses":
		return cfg.Pool.PodIPv6()
	}
	return true
}

// Run checks, with one authorization check each, every EC2 action
// cfg needs (in the zone's custom networking line, when set, for where new
// ENIs go). It changes nothing. An error means no check could run (no
// identity from IMDS); a denied action is in the report, not an error.
func Run(ctx context.Context, cl Cloud, cfg settings.Effective, in settings.Inputs) (Report, error) {
	p, err := ShippedPolicy()
	if err != nil {
		return Report{}, err
	}
	actions := NeededActions(p, cfg)
	rep := Report{Checks: []Check{}}
	if len(actions) == 0 {
		return rep, nil
	}
	t, calls, err := dryRunTarget(ctx, cl, cfg, in, slices.Contains(actions, "ec2:DetachNetworkInterface"))
	if err != nil {
		return Report{}, err
	}
	rep.Calls = calls
	for _, a := range actions {
		rep.Checks = append(rep.Checks, checkAction(ctx, cl, p, a, t))
		rep.Calls++
	}
	rep.Add = toAdd(p, rep.Checks)
	return rep, nil
}

func checkAction(ctx context.Context, cl Cloud, p Policy, action string, t cloud.DryRunTarget) Check {
	op := strings.TrimPrefix(action, "ec2:")
	c := Check{Action: action, Result: Allowed, Method: "dry-run", Statement: statementOf(p, action)}
	if cloud.Probed(op) {
		c.Method = "probe"
	}
	err := cl.DryRun(ctx, op, t)
	switch {
	case err == nil:
	case cloud.IsKind(err, cloud.KindUnauthorized):
		c.Result, c.Detail = Denied, "add "+action+" to the node's role (statement "+c.Statement+")"
	default:
		c.Result, c.Detail = Failed, err.Error()
	}
	return c
}

// dryRunTarget names the node's own resources, from IMDS; the attachment
// ID needs one DescribeNetworkInterfaces of the primary ENI (calls says
// whether it was made).
func dryRunTarget(ctx context.Context, cl Cloud, cfg settings.Effective, in settings.Inputs, detach bool) (cloud.DryRunTarget, int, error) {
	id, err := cl.Identity(ctx)
	if err != nil {
		return cloud.DryRunTarget{}, 0, fmt.Errorf("the node's identity from instance metadata: %w", err)
	}
	t := cloud.DryRunTarget{InstanceID: id.InstanceID, InstanceType: id.InstanceType, ENIID: id.PrimaryENI,
		SubnetID: id.SubnetID, Groups: id.SecurityGroups, PrimaryIP: id.PrimaryIP, Prefixes: cfg.Pool.PrefixDelegation,
		Tags: cfg.AdditionalENITags, DeviceIndex: 1}
	if ifs, err := cl.AttachedInterfaces(ctx); err == nil {
		for _, i := range ifs {
			t.DeviceIndex = max(t.DeviceIndex, i.DeviceIndex+1)
		}
	}
	if c, ok, err := settings.ENIConfigFor(in, id.AZ); cfg.Pool.CustomNetworking && ok && err == nil {
		t.SubnetID = c.Subnet
		if len(c.SecurityGroups) > 0 {
			t.Groups = c.SecurityGroups
		}
	}
	if !detach {
		return t, 0, nil
	}
	if eni, err := cl.ENIByID(ctx, id.PrimaryENI); err == nil {
		t.AttachmentID = eni.AttachmentID
	}
	return t, 1, nil
}

func statementOf(p Policy, action string) string {
	for _, s := range p.Statement {
		if slices.Contains(s.Action, action) {
			return s.Sid
		}
	}
	return ""
}

// toAdd is the shipped policy narrowed to the actions not allowed.
func toAdd(p Policy, checks []Check) *Policy {
	out := Policy{Version: p.Version}
	for _, s := range p.Statement {
		s.Action = slices.DeleteFunc(slices.Clone(s.Action), func(a string) bool {
			return !slices.ContainsFunc(checks, func(c Check) bool { return c.Action == a && c.Result == Denied })
		})
		if len(s.Action) > 0 {
			out.Statement = append(out.Statement, s)
		}
	}
	if len(out.Statement) == 0 {
		return nil
	}
	return &out
}
