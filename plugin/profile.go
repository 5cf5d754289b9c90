package plugin

import (
	"encoding/json"
	"slices"
	"strings"

	"vpc-cni/settings"
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

// pickProfile sets the ADD's profile from the pod's annotation, checked
// against the node's configuration: a profile that is not configured, or
// that PROFILES does not list, fails with code 7 naming it.
func (c *call) pickProfile() error {
	name, err := c.cfg.podProfile()
	if err != nil || name == "" {
		return err
	}
	e, err := c.cfg.Knobs(settings.Overrides{})
	if err != nil {
		return err
	}
	p, ok := e.Profile(name)
	if !ok {
		var known []string
		for _, p := range e.Profiles {
			known = append(known, p.Name)
		}
		slices.Sort(known)
		list := "none is"
		if len(known) > 0 {
			list = strings.Join(known, ", ") + " are"
		}
		return invalid("the pod's annotation %s=%s names a profile this node does not have (%s configured: %s<NAME>_* keys)",
			settings.ProfileAnnotation, name, list, settings.ProfilePrefix)
	}
	if !p.Allowed {
		v := e.Value(settings.Profiles)
		return invalid("the pod's annotation %s=%s names a profile this node does not serve (%s=%s, %s)",
			settings.ProfileAnnotation, name, settings.Profiles, v.Value, v.Origin())
	}
	if e.Pool.IPv4Off {
		return invalid("the pod's annotation %s=%s: a network profile gives pods an IPv4 of its ENIs, and this node gives pods none (%s=false)",
			settings.ProfileAnnotation, name, settings.EnableIPv4)
	}
	c.profile = name
	return nil
}
