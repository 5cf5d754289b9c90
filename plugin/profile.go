package plugin

import (
	"encoding/json"
	"strings"

	"vpc-cni/pool"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// PodAnnotationsCapability is the runtimeConfig key under which containerd
// (1.5 and later) and CRI-O pass the pod's annotations to a plugin whose
// conflist entry declares it in "capabilities". **contract**
const PodAnnotationsCapability = "io.kubernetes.cri.pod-annotations"

// podProfile is the network profile the pod picked with the
// vpc-cni.io/profile annotation, "" when it picked none. Only ADD reads it:
// DEL, CHECK and GC use the profile stored with the assignment. A
// runtimeConfig that is not what the capability passes, or a value that is
// no profile name, is an invalid configuration (code 7) naming the annotation.
func (c *Config) podProfile() (string, error) {
	if len(c.runtimeConfig) == 0 {
		return "", nil
	}
	var rc struct {
		Annotations map[string]string `json:"io.kubernetes.cri.pod-annotations"`
	}
	if err := json.Unmarshal(c.runtimeConfig, &rc); err != nil {
		return "", invalid("runtimeConfig[%q]: %v", PodAnnotationsCapability, err)
	}
	name, ok := rc.Annotations[settings.ProfileAnnotation]
	if !ok || strings.TrimSpace(name) == "" {
		return "", nil
	}
	if why := settings.ValidProfileName(name); why != "" {
		return "", invalid("the pod's annotation %s=%q: %s", settings.ProfileAnnotation, cut(name), why)
	}
	return name, nil
}

func cut(s string) string {
	if len(s) > 80 {
		return s[:64] + "..."
	}
	return s
}

// pickPool resolves the configuration and the pod's pool (its
// vpc-cni.io/profile annotation; none: the default pool) before the take.
// A profile that is not configured, that PROFILES does not list, or that is
// bound to other namespaces than the pod's fails with code 7. The message
// names only what the pod asked for: a pod learns nothing of the node's
// other profiles.
func (c *call) pickPool() error {
	e, err := c.knobs()
	if err != nil {
		return err
	}
	annotation, err := c.cfg.podProfile()
	if err != nil {
		return err
	}
	name := pool.PoolOrDefault(annotation)
	spec, ok := e.Spec(name)
	asked := settings.ProfileAnnotation + "=" + annotation
	switch {
	case !ok:
		return invalid("the pod's annotation %s names a profile this node does not have (no %s keys)",
			asked, settings.ProfileKey(annotation, "*"))
	case !spec.Allowed:
		return invalid("the pod's annotation %s names a profile this node does not serve (not in %s, %s)",
			asked, settings.Profiles, e.Value(settings.Profiles).Origin())
	case !spec.Admits(c.pod.Namespace):
		return invalid("the pod's annotation %s: profile %s is not for pods of namespace %s (%s, %s)",
			asked, annotation, namespaceText(c.pod.Namespace), settings.ProfileKey(annotation, settings.ProfileNamespaces),
			e.Value(settings.ProfileKey(annotation, settings.ProfileNamespaces)).Origin())
	case e.Pool.IPv4Off && name.NeedsIPv4():
		return invalid("the pod's annotation %s: a network profile gives pods an IPv4 of its ENIs, and this node gives pods none (%s=false)",
			asked, settings.EnableIPv4)
	}
	c.pool = store.PodPoolOf(spec)
	return nil
}

// namespaceText names the pod's namespace, or says CNI_ARGS gave none.
func namespaceText(ns string) string {
	if ns == "" {
		return "(none: no K8S_POD_NAMESPACE in CNI_ARGS)"
	}
	return ns
}
