package doctor

import (
	"fmt"

	"vpc-cni/maxpods"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// Kubelet is where the kubelet's configuration is: its --config file and
// its --config-dir of drop-ins.
type Kubelet struct {
	Config    string
	DropInDir string
}

// CheckKubeletMaxPods compares the kubelet's maxPods with the pods the node
// can hold (`vpcctl max-pods`). Above it, the scheduler sends pods whose
// ADD fails for want of an address: they sit in ContainerCreating. Below
// it, capacity goes unused (information). Nothing when the node is not
// learnt yet (Run says so).
func CheckKubeletMaxPods(st *store.Store, in settings.Inputs, k Kubelet) []Finding {
	rep, err := maxpods.Online(st, in)
	if err != nil {
		return nil
	}
	return []Finding{kubeletFinding(rep.MaxPods, k)}
}

func kubeletFinding(holds int, k Kubelet) Finding {
	const check = "kubelet max pods"
	ks, found, err := maxpods.ReadKubelet(k.Config, k.DropInDir)
	switch {
	case err != nil:
		return Finding{check, false, "reading the kubelet's configuration: " + err.Error()}
	case !found:
		return Finding{check, true, fmt.Sprintf("not checked: no kubelet configuration at %s (--kubelet-config); the node holds %d pods", k.Config, holds)}
	case ks.MaxPods > holds:
		return Finding{check, false, fmt.Sprintf("the kubelet's maxPods is %d (%s) but the node's addresses hold %d pods: "+
			"pods beyond that stay in ContainerCreating; set maxPods to %d (vpcctl max-pods --write-kubelet-dropin %s/%s, then restart the kubelet)",
			ks.MaxPods, ks.From, holds, holds, k.DropInDir, maxpods.DropInName)}
	case ks.MaxPods < holds:
		return Finding{check, true, fmt.Sprintf("the kubelet's maxPods is %d (%s); the node could hold %d pods", ks.MaxPods, ks.From, holds)}
	}
	return Finding{check, true, fmt.Sprintf("%d (%s), what the node holds", ks.MaxPods, ks.From)}
}
