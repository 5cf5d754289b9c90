//go:build cluster

package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"vpc-cni/internal/testsupport/clusterhost"
)

// firstError is the first error-severity line p logged since its mark (the
// log's size when mark was called), with the log's path.
func (p *proc) firstError() string {
	f, err := os.Open(p.log)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if _, err := f.Seek(p.mark, io.SeekStart); err != nil {
		return err.Error()
	}
	b, _ := io.ReadAll(f)
	if line := clusterhost.FirstError(string(b), 600); line != "" {
		return fmt.Sprintf("%s's first error since %s (%s):\n  %s", p.name, p.since, p.log, line)
	}
	return fmt.Sprintf("%s logged no error since %s (%s)", p.name, p.since, p.log)
}

// markNow makes firstError read only what p logs from now on (since what).
func (p *proc) markNow(what string) {
	if fi, err := os.Stat(p.log); err == nil {
		p.mark, p.since = fi.Size(), what
	}
}

// whyNotReady says, for each node, its Ready condition as the API has it
// and the first error its containerd and kubelet logged.
func (c *cluster) whyNotReady() string {
	out, _ := c.kubectlOut(nil, "get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name}: Ready=`+
		`{.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].message}{"\n"}{end}`)
	var b strings.Builder
	fmt.Fprintf(&b, "the nodes as the API has them:\n%s", out)
	for _, n := range c.nodes {
		for _, p := range []*proc{n.ctrd, n.kubelet} {
			if p == nil {
				continue
			}
			if p.exited() {
				fmt.Fprintf(&b, "%s exited; its log's end:\n%s\n", p.name, p.tail())
				continue
			}
			fmt.Fprintln(&b, p.firstError())
		}
	}
	return b.String()
}

// podsCannotStart is the kubelet's warning when a kube-system pod (the
// DaemonSets a node needs to turn Ready) failed to start twice: the runtime
// cannot start containers, and waiting longer would not change it. Each
// failure is an event of its own (their messages name different sandboxes).
func (c *cluster) podsCannotStart() string {
	out, err := c.kubectlOut(nil, "get", "events", "-n", "kube-system", "--field-selector", "type=Warning", "-o",
		`jsonpath={range .items[*]}{.reason}{"\t"}{.count}{"\t"}{.involvedObject.name}{"\t"}{.message}{"\n"}{end}`)
	if err != nil {
		return ""
	}
	failures := map[string]int{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.SplitN(line, "\t", 4)
		if len(f) < 4 || (f[0] != "FailedCreatePodSandBox" && f[0] != "Failed") {
			continue
		}
		n, _ := strconv.Atoi(f[1])
		if failures[f[2]] += max(n, 1); failures[f[2]] >= 2 {
			return f[2] + ": " + f[3]
		}
	}
	return ""
}
