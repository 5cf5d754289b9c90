package migrate

import (
	"fmt"
	"strconv"
	"strings"
)

// PolicyAgent is what aws-node's DaemonSet says of its policy agent's
// switch (--enable-network-policy): with it off, the agent enforced no
// policy whatever NETWORK_POLICY_ENFORCING_MODE said.
type PolicyAgent string

const (
	AgentUnknown PolicyAgent = ""    // env lines, or no agent container
	AgentOff     PolicyAgent = "off" // the reference manifest's default
	AgentOn      PolicyAgent = "on"
)

// agentContainer is the policy agent's container in aws-node's DaemonSet.
const agentContainer = "aws-eks-nodeagent"

// agentFlag is the agent's switch; the agent's default is off.
const agentFlag = "enable-network-policy"

// agentSwitch reads the switch from the agent container's args (nil: no
// agent container). A value the agent would refuse is an error.
func agentSwitch(c map[string]any) (PolicyAgent, error) {
	if c == nil {
		return AgentUnknown, nil
	}
	on := false
	args, _ := c["args"].([]any)
	for _, a := range args {
		s, _ := a.(string)
		name, value, hasValue := strings.Cut(strings.TrimLeft(s, "-"), "=")
		if !strings.HasPrefix(s, "-") || name != agentFlag {
			continue
		}
		if !hasValue {
			value = "true"
		}
		b, err := strconv.ParseBool(value)
		if err != nil {
			return AgentUnknown, fmt.Errorf("the %s container's --%s=%q is not true or false", agentContainer, agentFlag, value)
		}
		on = b
	}
	if on {
		return AgentOn, nil
	}
	return AgentOff, nil
}
