package clusterhost

import (
	"regexp"
	"strings"
)

// errorLine is a line logged at error or fatal severity: containerd's
// logrus text (level=error), klog's (E0102 15:04:05...), or a Go program's
// last words ("Error: ...", "panic: ...").
var errorLine = regexp.MustCompile(`level=(error|fatal)\b|^[EF]\d{4} \d\d:\d\d:\d\d|^(Error|panic|fatal error): `)

// healthyNoise are the errors a healthy node of the cluster tier logs too
// (kubelet v1.37 and containerd v2.4 in a node's namespaces, read from the
// logs of a cluster that passed): none says why a node failed.
var healthyNoise = regexp.MustCompile(strings.Join([]string{
	`Failed to set rlimit on max file handles`,                     // no CAP_SYS_RESOURCE over the machine's limit
	`nodes? \\"node\d\\" not found`,                                // before the kubelet registers its node
	`Skipping pod synchronization`,                                 // before the first PLEG relist
	`Failed to read data from checkpoint`,                          // a first start
	`Failed to ensure process in container with oom`,               // the kubelet's pid namespace is the machine's
	`Failed to get the info of the filesystem|HasDedicatedImageFs`, // overlays on a virtual disk
	`failed to reload cni configuration after receiving fs change`, // the conflist's temporary file
	`collecting metrics for .*cgroup deleted`,                      // a container that just ended
}, "|"))

// FirstError is the first line of log at error severity that a healthy
// node does not log too, shortened to max bytes; "" when there is none.
func FirstError(log string, max int) string {
	for _, line := range strings.Split(log, "\n") {
		if errorLine.MatchString(line) && !healthyNoise.MatchString(line) {
			if len(line) > max {
				line = line[:max] + "..."
			}
			return line
		}
	}
	return ""
}
