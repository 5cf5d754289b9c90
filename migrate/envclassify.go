package migrate

import (
	"strconv"
	"strings"

	"vpc-cni/settings"
)

// refused is byFate's word for a variable whose drop stops the migration.
const refused = "refused"

// unknownFate marks a variable settings.AWSNodeVars does not list.
const unknownFate = "unknown"

// matters says which are the answered-differently variables whose non-default value
// changes what the node does, so dropping them is refused: another EC2
// endpoint, an ENIConfig chosen by another label or annotation (custom
// networking needs ENI_CONFIG_<ZONE> lines instead), rp_filter left alone.
// The others (logs, introspection, metrics, paths) change where to look,
// not what the node does.
func matters(name string) bool {
	switch name {
	case "AWS_EC2_ENDPOINT", "ENI_CONFIG_LABEL_DEF", "ENI_CONFIG_ANNOTATION_DEF", "AWS_VPC_K8S_CNI_CONFIGURE_RPFILTER":
		return true
	}
	return false
}

// classify decides each variable's fate: pure policy over the one table.
func classify(vars []EnvVar, agent PolicyAgent) []ConfigVar {
	out := make([]ConfigVar, 0, len(vars))
	for _, e := range vars {
		out = append(out, classifyOne(e, agent))
	}
	return checkCustomNetworking(out)
}

func classifyOne(e EnvVar, agent PolicyAgent) ConfigVar {
	v := ConfigVar{EnvVar: e, Fate: unknownFate}
	known, ok := settings.LookupAWSNodeVar(e.Name)
	if !ok && strings.HasPrefix(e.Name, settings.ENIConfigPrefix) && e.From == "" {
		known, ok = settings.AWSNodeVar{Name: e.Name, Fate: settings.Carried}, true // one zone's ENIConfig, as a line
	}
	if ok {
		v.Fate = string(known.Fate)
	}
	switch {
	case !ok && e.From == "" && sdkVariable(e.Name):
		v.Action, v.Note = Dropped, "the AWS SDK's: vpc-cni reads it from its own environment, not the config file (the node's region comes from IMDS)"
	case !ok:
		v.Action, v.Stops, v.Note = Dropped, true, "not an aws-node variable vpc-cni knows: find out what it does, then --force drops it"
	case e.From != "" && known.Fate == settings.Carried:
		v.Action, v.Stops, v.Note = Dropped, true, "its value comes from the Kubernetes API ("+e.From+"), which vpc-cni does not read: "+
			"put "+e.Name+"=<the value> in the file, or --force drops it"
	case e.From != "":
		v.Action, v.Note = Dropped, "its value comes from the Kubernetes API, which vpc-cni does not read; "+instead(known)
	case e.Name == settings.NetworkPolicyMode:
		v.Action, v.Note = policyMode(e.Value, agent)
	default:
		v.Action, v.Note = byFate(known, e.Value)
		v.Stops = v.Action == refused
		if v.Stops {
			v.Action = Dropped
		}
	}
	return v
}

// byFate is the action for a variable with a value.
func byFate(known settings.AWSNodeVar, value string) (action, note string) {
	same := sameAsDefault(value, known.Default)
	switch {
	case known.Fate == settings.Carried && strings.TrimSpace(value) == "":
		return Dropped, "empty: vpc-cni takes its default, as aws-node does"
	case known.Fate == settings.Carried:
		return Written, ""
	case known.Fate == settings.NotYet && same:
		return Dropped, "aws-node's default (" + known.Default + "): vpc-cni behaves so already"
	case known.Fate == settings.NotYet:
		return refused, "vpc-cni cannot honour it yet: it has no " + known.Instead + "; it behaves as aws-node's default (" +
			printed(known.Default) + ")"
	case same || !matters(known.Name):
		return Dropped, instead(known)
	}
	return refused, "not aws-node's default (" + printed(known.Default) + "), and it matters: " + known.Instead
}

func instead(known settings.AWSNodeVar) string {
	if known.Fate == settings.NotYet {
		return "vpc-cni cannot honour it yet: it has no " + known.Instead
	}
	return "this design does it another way: " + known.Instead
}

func printed(def string) string {
	if def == "" {
		return "unset"
	}
	return def
}

// sameAsDefault compares as aws-node would read them: booleans as booleans,
// words without case; empty is the default.
func sameAsDefault(value, def string) bool {
	value, def = strings.TrimSpace(value), strings.TrimSpace(def)
	if value == "" || strings.EqualFold(value, def) {
		return true
	}
	a, errA := strconv.ParseBool(value)
	b, errB := strconv.ParseBool(def)
	return errA == nil && errB == nil && a == b
}

// sdkVariable: AWS_* names that are not aws-node's AWS_VPC_* knobs, and the
// proxy variables, are the SDK's.
func sdkVariable(name string) bool {
	switch strings.ToUpper(name) {
	case "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY":
		return true
	}
	return strings.HasPrefix(name, "AWS_") && !strings.HasPrefix(name, "AWS_VPC_")
}

// checkCustomNetworking refuses custom networking without its ENIConfigs:
// aws-node reads them from the API; here each zone is one ENI_CONFIG_<ZONE>
// line, which the DaemonSet cannot give.
func checkCustomNetworking(vars []ConfigVar) []ConfigVar {
	on, lines := -1, 0
	for i, v := range vars {
		if v.Name == settings.CustomNetworkCfg && v.Action == Written {
			if b, _ := strconv.ParseBool(v.Value); b {
				on = i
			}
		}
		if strings.HasPrefix(v.Name, settings.ENIConfigPrefix) && v.Action == Written {
			lines++
		}
	}
	if on >= 0 && lines == 0 {
		vars[on].Stops = true
		vars[on].Note = "custom networking needs one " + settings.ENIConfigPrefix + "<ZONE>=subnet=...,securityGroups=... line per zone " +
			"(from `kubectl get eniconfig`), which the DaemonSet does not hold: add them to the KEY=VALUE form of this file " +
			"and run again, or --force writes the config without custom networking's zones (add them before the first pass)"
	}
	return vars
}

// policyMode carries aws-node's mode with what it now needs: the agent
// beside vpc-cni, as beside aws-node. none, which the agent refuses, is
// policy off: the knob unset. The note says whether aws-node's agent
// enforced policy, when its DaemonSet says.
func policyMode(value string, agent PolicyAgent) (action, note string) {
	switch v := strings.ToLower(strings.TrimSpace(value)); v {
	case "":
		return Dropped, "empty: policy off, as aws-node"
	case "none":
		return Dropped, "none: the policy agent refuses it, so policy was off; vpc-cni's off is the knob unset"
	default:
		return Written, agentNote(agent) + "every pod ADD calls the network policy agent: run it beside vpc-cni " +
			"(the chart's networkPolicy.enabled=true, networkPolicy.enforcingMode=" + v + ") before the node moves, " +
			"or pods fail to start; docs/network-policy.md"
	}
}

// agentNote is what aws-node's agent did with the mode.
func agentNote(agent PolicyAgent) string {
	switch agent {
	case AgentOff:
		return "policy was NOT enforced on this node: aws-node's agent (" + agentContainer + ") ran with --" + agentFlag +
			"=false; with vpc-cni the chart's networkPolicy.enabled=true turns the agent's switch on and enforces " +
			"policies (to keep them off, remove this line); "
	case AgentOn:
		return "policy was enforced on this node (aws-node's agent ran with --" + agentFlag + "=true); "
	}
	return ""
}
