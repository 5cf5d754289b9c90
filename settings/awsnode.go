package settings

import "slices"

// Fate says what vpc-cni does with one of aws-node's environment variables.
type Fate string

const (
	// Carried: the same name and meaning, in the config file or environment.
	Carried Fate = "carried"
	// Answered: this design does it another way; Instead names the equivalent.
	Answered Fate = "answered-differently"
	// NotYet: vpc-cni cannot honour it yet; Instead says what is missing.
	NotYet Fate = "not-yet"
)

// AWSNodeVar is one variable of the aws-node DaemonSet (amazon-vpc-cni-k8s).
type AWSNodeVar struct {
	Name    string `json:"name"`
	Fate    Fate   `json:"fate"`
	Default string `json:"default,omitempty"` // aws-node's default, as its manifest spells it
	Instead string `json:"instead,omitempty"` // Answered: what to set; NotYet: what is missing
}

// AWSNodeVars is the one table of aws-node's variables: the registry's
// knobs carried from it, then the ones vpc-cni does not carry. The config
// file refuses the latter, and `migrate --aws-node-env` reads it.
var AWSNodeVars = append(carriedVars(), notCarried...)

// carriedVars lists the registry's knobs of aws-node, with its defaults.
func carriedVars() []AWSNodeVar {
	var out []AWSNodeVar
	for _, k := range Registry {
		if k.Fate != "" {
			out = append(out, AWSNodeVar{Name: k.Name, Fate: k.Fate, Default: k.AWSDefault})
		}
	}
	return out
}

// notCarried are aws-node's variables that are not knobs here.
var notCarried = []AWSNodeVar{
	{Name: "AWS_VPC_K8S_CNI_LOGLEVEL", Fate: Answered, Default: "DEBUG",
		Instead: "vpcctl (reconcile, the timer) logs to stderr, the journal: set VPC_CNI_LOG_LEVEL (debug, info, warn, error) or --log-level instead"},
	{Name: "AWS_VPC_K8S_CNI_LOG_FILE", Fate: Answered, Default: "/host/var/log/aws-routed-eni/ipamd.log",
		Instead: "vpcctl (reconcile, the timer) logs to stderr, the journal (journalctl -u vpc-cni-reconcile); there is no file to set"},
	{Name: "AWS_VPC_K8S_PLUGIN_LOG_FILE", Fate: Answered, Default: "/var/log/aws-routed-eni/plugin.log",
		Instead: "the plugin logs to the conflist's \"logFile\" (default /var/log/vpc-cni/plugin.log): set it there instead"},
	{Name: "AWS_VPC_K8S_PLUGIN_LOG_LEVEL", Fate: Answered, Default: "DEBUG",
		Instead: "the plugin's level is the conflist's \"logLevel\" (debug, info, warn, error): set it there instead"},
	{Name: "INTROSPECTION_BIND_ADDRESS", Fate: Answered, Default: "127.0.0.1:61679",
		Instead: "vpc-cni has no introspection endpoint: read `vpcctl pool status -o json` and `vpcctl events -o json` on the node instead"},
	{Name: "DISABLE_INTROSPECTION", Fate: Answered, Default: "false",
		Instead: "vpc-cni has no introspection endpoint, so there is nothing to disable; remove it"},
	{Name: "DISABLE_METRICS", Fate: Answered, Default: "false",
		Instead: "the DaemonSet's loop serves /metrics as the chart's metrics.bind says (primary, loopback or off), and honours DISABLE_METRICS=true in its own environment, not in this file: set metrics.bind=off instead"},
	{Name: "AWS_VPC_K8S_CNI_BACKING_STORE", Fate: Answered, Default: "/var/run/aws-node/ipam.json",
		Instead: "the node state is one bbolt file, state.db under VPC_CNI_STATE_DIR (--state-dir, default /var/lib/vpc-cni): set that instead"},
	{Name: "AWS_EC2_ENDPOINT", Fate: Answered,
		Instead: "vpc-cni takes the AWS SDK's AWS_ENDPOINT_URL_EC2 from the environment: set that instead"},
	{Name: "ENABLE_NFTABLES", Fate: Answered, Default: "false",
		Instead: "the node rules are always nftables (table ip vpc-cni); remove it"},
	{Name: "AWS_VPC_K8S_CNI_CONFIGURE_RPFILTER", Fate: Answered, Default: "true",
		Instead: "every pass sets loose rp_filter on the primary interface itself; remove it"},
	{Name: "ENI_CONFIG_LABEL_DEF", Fate: Answered,
		Instead: "custom networking takes one ENI_CONFIG_<ZONE>=subnet=...,securityGroups=... line per zone in this file: write those instead"},
	{Name: "ENI_CONFIG_ANNOTATION_DEF", Fate: Answered,
		Instead: "custom networking takes one ENI_CONFIG_<ZONE>=subnet=...,securityGroups=... line per zone in this file: write those instead"},
	{Name: "CLUSTER_ENDPOINT", Fate: Answered,
		Instead: "vpc-cni does not talk to the Kubernetes API server (the node is learnt from IMDS); remove it"},
	{Name: "MY_NODE_NAME", Fate: Answered,
		Instead: "vpc-cni does not talk to the Kubernetes API server (the node is learnt from IMDS); remove it"},
	{Name: "MY_POD_NAME", Fate: Answered,
		Instead: "vpc-cni does not talk to the Kubernetes API server (the node is learnt from IMDS); remove it"},
	{Name: "VPC_ID", Fate: Answered,
		Instead: "the node's VPC is learnt from IMDS and checked against EC2; remove it"},
	{Name: "VPC_CNI_VERSION", Fate: Answered,
		Instead: "aws-node's own version, for its user agent; `vpcctl version` tells vpc-cni's; remove it"},

	{Name: "ENABLE_POD_ENI", Fate: NotYet, Default: "false", Instead: "security groups for pods (trunk and branch ENIs)"},
	{Name: "POD_SECURITY_GROUP_ENFORCING_MODE", Fate: NotYet, Default: "strict", Instead: "security groups for pods"},
	{Name: "ENABLE_MULTI_NIC", Fate: NotYet, Default: "false", Instead: "pods on network cards other than 0"},
	{Name: "ANNOTATE_POD_IP", Fate: NotYet, Default: "false", Instead: "pod annotations (it does not talk to the API server)"},
	{Name: "AWS_MANAGE_ENIS_NON_SCHEDULABLE", Fate: NotYet, Default: "false", Instead: "view of the Node's taints (it does not talk to the API server)"},
	{Name: "DISABLE_TCP_EARLY_DEMUX", Fate: NotYet, Default: "false", Instead: "setting of net.ipv4.tcp_early_demux"},
	{Name: "HTTP_TIMEOUT", Fate: NotYet, Default: "10", Instead: "per-request EC2/IMDS timeout knob"},
}

// LookupAWSNodeVar finds one of aws-node's variables in the table.
func LookupAWSNodeVar(name string) (AWSNodeVar, bool) {
	i := slices.IndexFunc(AWSNodeVars, func(v AWSNodeVar) bool { return v.Name == name })
	if i < 0 {
		return AWSNodeVar{}, false
	}
	return AWSNodeVars[i], true
}

// refusal is the config file's answer to an aws-node variable it does not
// carry ("" for a carried one).
func (v AWSNodeVar) refusal() string {
	switch v.Fate {
	case Answered:
		return v.Name + " is aws-node's; " + v.Instead
	case NotYet:
		msg := v.Name + " is aws-node's, and vpc-cni cannot honour it yet: it has no " + v.Instead + "; remove it"
		if v.Default != "" {
			msg += " (vpc-cni behaves as aws-node's default, " + v.Default + ")"
		}
		return msg
	}
	return ""
}
