package deploy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"vpc-cni/settings"
)

// Every manifest decodes strictly (an unknown or misspelt field fails) into
// the Kubernetes API type its kind names.
func TestManifestsDecodeStrictly(t *testing.T) {
	files, err := filepath.Glob("kubernetes/*.yaml")
	more, _ := filepath.Glob("kubernetes/*/*.yaml")
	files = append(files, more...)
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	kinds := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(data, &tm); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		obj, ok := map[string]any{"DaemonSet": &appsv1.DaemonSet{}, "ConfigMap": &corev1.ConfigMap{}, "PodMonitor": &monitoringv1.PodMonitor{},
			"ValidatingAdmissionPolicy": &admissionv1.ValidatingAdmissionPolicy{}, "ValidatingAdmissionPolicyBinding": &admissionv1.ValidatingAdmissionPolicyBinding{}}[tm.Kind]
		if !ok {
			t.Fatalf("%s: kind %q has no check here", f, tm.Kind)
		}
		if err := yaml.UnmarshalStrict(data, obj); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		kinds[tm.Kind] = true
		switch o := obj.(type) {
		case *appsv1.DaemonSet:
			checkDaemonSet(t, o)
		case *corev1.ConfigMap:
			checkConfigMap(t, o)
		}
	}
	if !kinds["DaemonSet"] || !kinds["ConfigMap"] || !kinds["PodMonitor"] {
		t.Errorf("kinds %v: want a DaemonSet, its ConfigMap and a PodMonitor", kinds)
	}
}

// checkDaemonSet pins what a node agent that needs no Kubernetes API needs.
func checkDaemonSet(t *testing.T, ds *appsv1.DaemonSet) {
	t.Helper()
	spec := ds.Spec.Template.Spec
	if spec.ServiceAccountName != "" || spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Error("the DaemonSet must run without a service account token: it calls no Kubernetes API")
	}
	if !spec.HostNetwork || spec.PriorityClassName != "system-node-critical" {
		t.Errorf("hostNetwork %v, priority class %q", spec.HostNetwork, spec.PriorityClassName)
	}
	if !slices.ContainsFunc(spec.Tolerations, func(tol corev1.Toleration) bool { return tol.Operator == corev1.TolerationOpExists && tol.Key == "" }) {
		t.Error("the DaemonSet does not tolerate every taint")
	}
	if len(spec.InitContainers) != 1 || !strings.Contains(strings.Join(spec.InitContainers[0].Command, " "), "install --timer none") {
		t.Errorf("the init container does not run vpcctl install --timer none: %v", spec.InitContainers)
	}
	if len(spec.Containers) != 1 || !slices.Contains(spec.Containers[0].Command, "--every") {
		t.Errorf("the container does not run a reconcile loop: %v", spec.Containers)
	}
	if len(spec.Containers) == 1 {
		checkMetricsOnPrimary(t, spec.Containers[0])
		checkProbes(t, spec.Containers[0])
	}
	checkFleetReady(t, ds)
	for _, c := range spec.InitContainers {
		// The one-shot install sets the node's sysctls, and a runtime mounts
		// /proc/sys writable only in a privileged container (aws-node's init
		// container is privileged for the same reason).
		if sc := c.SecurityContext; sc == nil || sc.Privileged == nil || !*sc.Privileged {
			t.Errorf("init container %s is not privileged: its pass could not set rp_filter under a read-only /proc/sys", c.Name)
		}
	}
	for _, c := range spec.Containers {
		sc := c.SecurityContext
		if sc == nil || sc.Privileged != nil && *sc.Privileged || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			t.Errorf("container %s: privileged or without drop ALL", c.Name)
			continue
		}
		if err := confined(c, spec.SecurityContext); err != nil {
			t.Errorf("container %s: %v", c.Name, err)
		}
	}
}

// checkProbes: readiness and liveness on the loop's /healthz, on its own
// listener on 127.0.0.1 (port health, served with --health-listen), which
// no pod can reach and connections to the metrics port cannot fill.
func checkProbes(t *testing.T, c corev1.Container) {
	t.Helper()
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "health" && p.ContainerPort == 61680 }) ||
		!strings.Contains(strings.Join(c.Command, " "), "--health-listen 127.0.0.1:61680") {
		t.Errorf("container %s: /healthz is not served on 127.0.0.1:61680 as port health: %v %v", c.Name, c.Command, c.Ports)
	}
	for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.String() != "health" || p.HTTPGet.Host != "127.0.0.1" {
			t.Errorf("container %s: %s probe %+v; want GET /healthz on port health, host 127.0.0.1", c.Name, name, p)
		}
	}
}

// checkFleetReady: what a fleet needs of a node agent's manifest: Linux
// nodes only, the recommended labels, an image tag that names a release,
// and an update that rolls a bounded share of the nodes at a time.
func checkFleetReady(t *testing.T, ds *appsv1.DaemonSet) {
	t.Helper()
	spec := ds.Spec.Template.Spec
	linux := false
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			linux = linux || slices.ContainsFunc(term.MatchExpressions, func(e corev1.NodeSelectorRequirement) bool {
				return e.Key == "kubernetes.io/os" && e.Operator == corev1.NodeSelectorOpIn && slices.Equal(e.Values, []string{"linux"})
			})
		}
	}
	if !linux {
		t.Errorf("no required node affinity to kubernetes.io/os=linux: %+v", spec.Affinity)
	}
	for _, labels := range []map[string]string{ds.Labels, ds.Spec.Template.Labels} {
		for _, k := range []string{"name", "instance", "version", "component", "part-of", "managed-by"} {
			if labels["app.kubernetes.io/"+k] == "" {
				t.Errorf("label app.kubernetes.io/%s missing: %v", k, labels)
			}
		}
	}
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		if _, tag, ok := strings.Cut(c.Image, ":"); !ok || tag == "" || tag == "latest" {
			t.Errorf("container %s: image %q; want a release's tag, not latest", c.Name, c.Image)
		}
	}
	if u := ds.Spec.UpdateStrategy; u.Type != appsv1.RollingUpdateDaemonSetStrategyType || u.RollingUpdate == nil ||
		u.RollingUpdate.MaxUnavailable == nil || u.RollingUpdate.MaxUnavailable.String() == "100%" {
		t.Errorf("update strategy %+v; want a rolling update of a bounded share", u)
	}
}

// confined: a container runs under a seccomp profile (its own or the pod's),
// and one that adds CAP_SYS_ADMIN (or ALL) only under a Localhost profile
// that this directory ships: SYS_ADMIN is most of root, and aws-node's
// long-running container does without it.
func confined(c corev1.Container, pod *corev1.PodSecurityContext) error {
	profile := c.SecurityContext.SeccompProfile
	if profile == nil && pod != nil {
		profile = pod.SeccompProfile
	}
	if profile == nil || profile.Type == corev1.SeccompProfileTypeUnconfined {
		return errors.New("no seccomp profile (want RuntimeDefault, or a Localhost profile shipped in deploy/)")
	}
	broad := slices.ContainsFunc(c.SecurityContext.Capabilities.Add, func(cp corev1.Capability) bool {
		name := strings.TrimPrefix(strings.ToUpper(string(cp)), "CAP_")
		return name == "SYS_ADMIN" || name == "ALL"
	})
	if !broad {
		return nil
	}
	if profile.Type != corev1.SeccompProfileTypeLocalhost || profile.LocalhostProfile == nil {
		return fmt.Errorf("adds SYS_ADMIN under seccomp %s: only a Localhost profile shipped in deploy/ may confine it", profile.Type)
	}
	if _, err := os.Stat(filepath.Join("seccomp", filepath.Base(*profile.LocalhostProfile))); err != nil {
		return fmt.Errorf("adds SYS_ADMIN under Localhost profile %s, which deploy/seccomp/ does not ship: %v", *profile.LocalhostProfile, err)
	}
	return nil
}

// checkMetricsOnPrimary: by default the loop serves its metrics as port
// metrics, 61678 (aws-node's), on the node's primary address only (the
// downward API's status.hostIP), not on every address of the node.
func checkMetricsOnPrimary(t *testing.T, c corev1.Container) {
	t.Helper()
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" && p.ContainerPort == 61678 }) ||
		!strings.Contains(strings.Join(c.Command, " "), "--metrics-listen [$(HOST_IP)]:61678") {
		t.Errorf("the container does not serve its metrics on [$(HOST_IP)]:61678 as port metrics: %v %v", c.Command, c.Ports)
	}
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "HOST_IP" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.hostIP"
	}) {
		t.Errorf("the container's HOST_IP is not the downward API's status.hostIP: %+v", c.Env)
	}
}

// The ConfigMap's file is one the processes accept.
func checkConfigMap(t *testing.T, cm *corev1.ConfigMap) {
	t.Helper()
	f, err := settings.ParseFile("configmap", []byte(cm.Data["config"]))
	if err == nil {
		_, err = settings.Resolve(settings.Overrides{}, settings.Inputs{File: f})
	}
	if err != nil {
		t.Errorf("the ConfigMap's config: %v", err)
	}
}

// The rule itself: SYS_ADMIN passes only under a shipped Localhost profile.
func TestConfinedRule(t *testing.T) {
	ctr := func(profile *corev1.SeccompProfile, caps ...corev1.Capability) corev1.Container {
		return corev1.Container{SecurityContext: &corev1.SecurityContext{SeccompProfile: profile,
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: caps}}}
	}
	runtimeDefault := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	notShipped := "profiles/vpc-cni-not-shipped.json"
	local := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: &notShipped}
	for name, c := range map[string]struct {
		c   corev1.Container
		pod *corev1.PodSecurityContext
		ok  bool
	}{
		"NET_ADMIN under RuntimeDefault":           {c: ctr(runtimeDefault, "NET_ADMIN"), ok: true},
		"NET_ADMIN under the pod's RuntimeDefault": {c: ctr(nil, "NET_ADMIN"), pod: &corev1.PodSecurityContext{SeccompProfile: runtimeDefault}, ok: true},
		"no profile":                            {c: ctr(nil, "NET_ADMIN")},
		"SYS_ADMIN under RuntimeDefault":        {c: ctr(runtimeDefault, "NET_ADMIN", "SYS_ADMIN")},
		"CAP_SYS_ADMIN under RuntimeDefault":    {c: ctr(runtimeDefault, "CAP_SYS_ADMIN")},
		"ALL under RuntimeDefault":              {c: ctr(runtimeDefault, "ALL")},
		"SYS_ADMIN under a profile not shipped": {c: ctr(local, "SYS_ADMIN")},
		"SYS_ADMIN under Unconfined":            {c: ctr(&corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}, "SYS_ADMIN")},
	} {
		if err := confined(c.c, c.pod); (err == nil) != c.ok {
			t.Errorf("%s: %v, want allowed %v", name, err, c.ok)
		}
	}
}
