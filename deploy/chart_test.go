package deploy

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"sigs.k8s.io/yaml"

	"vpc-cni/internal/testsupport/gotool"
	"vpc-cni/settings"
)

// helmVersion is the helm the tests (and CI, through them) lint and render
// the chart with, built from the Go module proxy.
const helmVersion = "v3.22.0"

const chartDir = "helm/vpc-cni"

var update = flag.Bool("update", false, "write deploy/kubernetes/ from the chart's default render (make manifests)")

func helm(t *testing.T, args ...string) string {
	t.Helper()
	out, err := helmRun(t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// helmRun runs helm; on failure it returns stdout and stderr together.
func helmRun(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin := gotool.Build(t, "helm.sh/helm/v3/cmd/helm", helmVersion, "helm")
	cmd := exec.Command(bin, args...)
	home := t.TempDir() // no user's helm config, cache or repositories
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String() + errb.String(), err
	}
	return out.String(), nil
}

// A knob given a map, or a lower-case key, fails the render naming it.
func TestHelmRefusesABadKnob(t *testing.T) {
	for set, says := range map[string]string{"config.WARM_IP_TARGET.x=1": "config.WARM_IP_TARGET", "config.warm_ip_target=1": "config.warm_ip_target"} {
		out, err := helmRun(t, "template", "vpc-cni", chartDir, "--set", set)
		if err == nil || !strings.Contains(out, says) {
			t.Errorf("--set %s: %v, %q; want a failure naming %s", set, err, out, says)
		}
	}
}

func render(t *testing.T, args ...string) string {
	t.Helper()
	return helm(t, append([]string{"template", "vpc-cni", chartDir, "--namespace", "kube-system"}, args...)...)
}

var sourceLine = regexp.MustCompile(`(?m)^---\n# Source: vpc-cni/templates/([a-z-]+\.yaml)\n`)

// documents splits a render into template file → its text.
func documents(t *testing.T, text string) map[string]string {
	t.Helper()
	out := map[string]string{}
	idx := sourceLine.FindAllStringSubmatchIndex(text, -1)
	if len(idx) == 0 {
		t.Fatalf("no documents in the render:\n%s", text)
	}
	for i, m := range idx {
		end := len(text)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		out[text[m[2]:m[3]]] = text[m[1]:end]
	}
	return out
}

// decodeStrictly decodes every document into its Kubernetes API type; an
// unknown, misspelt or duplicate field fails.
func decodeStrictly(t *testing.T, docs map[string]string) map[string]runtime.Object {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, monitoringv1.AddToScheme, admissionv1.AddToScheme, rbacv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	s := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme, kjson.SerializerOptions{Yaml: true, Strict: true})
	out := map[string]runtime.Object{}
	for name, doc := range docs {
		obj, gvk, err := s.Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("%s does not decode strictly: %v\n%s", name, err, doc)
		}
		out[gvk.Kind] = obj
	}
	return out
}

// The plain manifests are the chart's default render (and the PodMonitor its
// render with podMonitor.create): one source. `make manifests` writes them.
func TestManifestsAreTheHelmChartsDefaultRender(t *testing.T) {
	want := map[string]string{}
	for name, doc := range documents(t, render(t)) {
		want[filepath.Join("kubernetes", name)] = doc
	}
	pm := render(t, "--set", "podMonitor.create=true", "--show-only", "templates/podmonitor.yaml")
	want[filepath.Join("kubernetes", "podmonitor", "podmonitor.yaml")] = documents(t, pm)["podmonitor.yaml"]
	for _, f := range []string{"profile-admission-policy.yaml", "profile-admission-binding.yaml"} {
		pa := render(t, "--set", "profileAdmission.create=true", "--show-only", "templates/"+f)
		want[filepath.Join("kubernetes", "profile-admission", f)] = documents(t, pa)[f]
	}
	have, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("kubernetes/*/*.yaml")
	for _, f := range append(have, more...) {
		if _, ok := want[f]; !ok {
			t.Errorf("%s is not rendered by the chart: make it a template or remove it", f)
		}
	}
	for f, doc := range want {
		if *update {
			if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(f)
		if err != nil || string(got) != doc {
			t.Errorf("deploy/%s differs from the chart's render (run make manifests): %v\n--- chart\n%s--- file\n%s", f, err, doc, got)
		}
	}
}

func TestHelmLint(t *testing.T) {
	helm(t, "lint", "--strict", chartDir)
	helm(t, "lint", "--strict", chartDir, "-f", allOnValues(t))
}

// allOnValues sets every knob (config.example's values), the service
// account for IRSA, the PodMonitor, the migration's selector and affinity.
func allOnValues(t *testing.T) string {
	t.Helper()
	config := map[string]string{}
	for _, l := range strings.Split(ConfigExample, "\n") {
		if kv, ok := strings.CutPrefix(l, "#"); ok && strings.Contains(kv, "=") && !strings.Contains(kv, " ") {
			k, v, _ := strings.Cut(kv, "=")
			config[k] = v
		}
	}
	values := map[string]any{
		"config":           config,
		"image":            map[string]any{"repository": "registry.example/vpc-cni", "tag": "v9.9.9", "pullPolicy": "IfNotPresent"},
		"serviceAccount":   map[string]any{"create": true, "roleArn": "arn:aws:iam::111122223333:role/vpc-cni"},
		"podMonitor":       map[string]any{"create": true, "labels": map[string]string{"release": "prometheus"}},
		"migration":        map[string]any{"onlyMigratedNodes": true},
		"profileAdmission": map[string]any{"create": true, "allowed": map[string][]string{"web": {"gold"}}},
		"nodeSelector":     map[string]string{"kubernetes.io/os": "linux"},
		"affinity": map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
			"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{
				"key": "eks.amazonaws.com/compute-type", "operator": "NotIn", "values": []string{"fargate"}}}}}}}},
		"tolerations": []any{map[string]any{"key": "dedicated", "operator": "Equal", "value": "net", "effect": "NoSchedule"}},
		"resources":   map[string]any{"requests": map[string]string{"cpu": "20m", "memory": "40Mi"}},
	}
	data, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Every knob of the configuration file is a value of the chart.
func TestHelmValuesNameEveryKnob(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Config map[string]any `json:"config"`
	}
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	for _, k := range settings.FileKeys {
		if _, ok := v.Config[k]; !ok {
			t.Errorf("values.yaml's config lacks %s", k)
		}
	}
	for k := range v.Config {
		if !slices.Contains(settings.FileKeys, k) {
			t.Errorf("values.yaml's config has %s, which is no knob", k)
		}
	}
}

// Rendered with every value set, each object decodes strictly and carries
// what the values asked for; no RBAC object is rendered (only
// networkPolicy.enabled, off here, binds the policy agent its ClusterRole).
func TestHelmRenderWithEveryValue(t *testing.T) {
	docs := documents(t, render(t, "-f", allOnValues(t)))
	objs := decodeStrictly(t, docs)
	if len(objs) != 6 {
		t.Errorf("kinds %v, want ConfigMap, DaemonSet, ServiceAccount, PodMonitor, ValidatingAdmissionPolicy and its binding", keys(objs))
	}
	if b, ok := objs["ValidatingAdmissionPolicyBinding"].(*admissionv1.ValidatingAdmissionPolicyBinding); !ok ||
		b.Spec.PolicyName != objs["ValidatingAdmissionPolicy"].(*admissionv1.ValidatingAdmissionPolicy).Name {
		t.Errorf("the binding does not bind the profiles' policy: %+v", objs["ValidatingAdmissionPolicyBinding"])
	}
	cm := objs["ConfigMap"].(*corev1.ConfigMap)
	checkConfigMap(t, cm)
	for _, k := range settings.FileKeys {
		if !strings.Contains(cm.Data["config"], "\n"+k+"=") && !strings.HasPrefix(cm.Data["config"], k+"=") {
			t.Errorf("the ConfigMap lacks %s:\n%s", k, cm.Data["config"])
		}
	}
	if !strings.Contains(cm.Data["config"], "AWS_VPC_K8S_CNI_CONNMARK=0x80\n") {
		t.Errorf("the connmark lost its hex form:\n%s", cm.Data["config"])
	}
	sa := objs["ServiceAccount"].(*corev1.ServiceAccount)
	if sa.Annotations["eks.amazonaws.com/role-arn"] != "arn:aws:iam::111122223333:role/vpc-cni" || sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		t.Errorf("service account %+v: want the IRSA annotation and no token", sa.ObjectMeta)
	}
	checkAllOnDaemonSet(t, objs["DaemonSet"].(*appsv1.DaemonSet), sa.Name)
	pm := objs["PodMonitor"].(*monitoringv1.PodMonitor)
	ds := objs["DaemonSet"].(*appsv1.DaemonSet)
	if ep := pm.Spec.PodMetricsEndpoints; len(ep) != 1 || ep[0].Port == nil || *ep[0].Port != "metrics" || ep[0].Path != "/metrics" {
		t.Errorf("PodMonitor endpoints %+v, want the port metrics, /metrics", ep)
	}
	for k, v := range pm.Spec.Selector.MatchLabels {
		if ds.Spec.Template.Labels[k] != v {
			t.Errorf("the PodMonitor selects %s=%s, which the DaemonSet's pods lack", k, v)
		}
	}
	for name, doc := range docs {
		if strings.Contains(doc, "rbac.authorization.k8s.io") {
			t.Errorf("%s has RBAC: vpc-cni calls no Kubernetes API (only the policy agent does)", name)
		}
	}
}

// metrics.bind puts the loop's listener on the node's primary address, on
// 127.0.0.1, or nowhere; the probes' own listener on 127.0.0.1 stays
// whatever it says. Another value, or a PodMonitor for a port Prometheus
// cannot reach, fails the render naming the value.
func TestHelmMetricsBind(t *testing.T) {
	for bind, want := range map[string]string{"loopback": "--metrics-listen 127.0.0.1:61678", "off": ""} {
		ds := decodeStrictly(t, documents(t, render(t, "--set", "metrics.bind="+bind)))["DaemonSet"].(*appsv1.DaemonSet)
		c := ds.Spec.Template.Spec.Containers[0]
		cmd := strings.Join(c.Command, " ")
		if want != "" && !strings.Contains(cmd, want) || want == "" && strings.Contains(cmd, "--metrics-listen") {
			t.Errorf("metrics.bind=%s: command %q, want %q", bind, cmd, want)
		}
		if len(c.Env) != 0 || (want == "") != (len(c.Ports) == 1) {
			t.Errorf("metrics.bind=%s: env %+v, ports %+v", bind, c.Env, c.Ports)
		}
		checkProbes(t, c)
	}
	for _, set := range [][]string{{"metrics.bind=0.0.0.0"}, {"metrics.bind=loopback", "podMonitor.create=true"}} {
		args := []string{"template", "vpc-cni", chartDir}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		if out, err := helmRun(t, args...); err == nil || !strings.Contains(out, "metrics.bind") {
			t.Errorf("--set %v: %v, %q; want a failure naming metrics.bind", set, err, out)
		}
	}
}

func checkAllOnDaemonSet(t *testing.T, ds *appsv1.DaemonSet, account string) {
	t.Helper()
	spec := ds.Spec.Template.Spec
	if spec.ServiceAccountName != account || spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("service account %q (automount %v), want %q without a token", spec.ServiceAccountName, spec.AutomountServiceAccountToken, account)
	}
	if spec.NodeSelector["vpc-cni/migrated"] != "true" || spec.NodeSelector["kubernetes.io/os"] != "linux" {
		t.Errorf("nodeSelector %v, want the migration's label and the value's", spec.NodeSelector)
	}
	if spec.Affinity == nil || spec.Affinity.NodeAffinity == nil {
		t.Error("no affinity")
	}
	if len(spec.Tolerations) != 1 || spec.Tolerations[0].Key != "dedicated" {
		t.Errorf("tolerations %+v", spec.Tolerations)
	}
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		if c.Image != "registry.example/vpc-cni:v9.9.9" || c.ImagePullPolicy != corev1.PullIfNotPresent {
			t.Errorf("container %s: image %s (%s)", c.Name, c.Image, c.ImagePullPolicy)
		}
	}
	checkMetricsOnPrimary(t, spec.Containers[0])
	if r := spec.Containers[0].Resources; r.Requests.Cpu().String() != "20m" || r.Requests.Memory().String() != "40Mi" {
		t.Errorf("resources %+v", r)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// The init container's install checks the role unless iamCheck=false.
func TestHelmIAMCheck(t *testing.T) {
	for value, skip := range map[string]bool{"true": false, "false": true} {
		ds := decodeStrictly(t, documents(t, render(t, "--set", "iamCheck="+value)))["DaemonSet"].(*appsv1.DaemonSet)
		cmd := strings.Join(ds.Spec.Template.Spec.InitContainers[0].Command, " ")
		if strings.Contains(cmd, "--skip-iam-check") != skip {
			t.Errorf("iamCheck=%s: init command %q", value, cmd)
		}
	}
}
