package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"vpc-cni/settings"
)

// valuesFile writes values (YAML) to a file for -f: --set would split a
// comma-separated list of namespaces.
func valuesFile(t *testing.T, values string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(path, []byte(values), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const goldForTeams = "config:\n  PROFILE_GOLD_SECURITY_GROUPS: sg-1\n  PROFILE_GOLD_NAMESPACES: team-a, team-b\n  PROFILE_BLUE_SNAT: none\n"

// A chart that configures profiles renders the admission policy unless
// told not to, and tells the nodes so (VPC_CNI_PROFILE_ADMISSION=true).
func TestTheChartTurnsTheAdmissionPolicyOnWhenItConfiguresProfiles(t *testing.T) {
	cases := []struct {
		name   string
		values string
		policy bool
	}{
		{"no profiles", "profileAdmission: {create: auto}\n", false},
		{"profiles, auto", goldForTeams, true},
		{"profiles, off", goldForTeams + "profileAdmission: {create: false}\n", false},
		{"no profiles, on", "profileAdmission: {create: true}\n", true},
		{"only a null profile key", "config: {PROFILE_GOLD_SNAT: null}\n", false},
	}
	for _, c := range cases {
		docs := documents(t, render(t, "-f", valuesFile(t, c.values)))
		_, policy := docs["profile-admission-policy.yaml"]
		_, binding := docs["profile-admission-binding.yaml"]
		cm := decodeStrictly(t, map[string]string{"configmap.yaml": docs["configmap.yaml"]})["ConfigMap"].(*corev1.ConfigMap)
		declared := strings.Contains(cm.Data["config"], "\nVPC_CNI_PROFILE_ADMISSION=true\n")
		if policy != c.policy || binding != c.policy || declared != c.policy {
			t.Errorf("%s: policy %v, binding %v, VPC_CNI_PROFILE_ADMISSION=true %v; want %v\n%s", c.name, policy, binding, declared, c.policy, cm.Data["config"])
		}
	}
	out, err := helmRun(t, "template", "vpc-cni", chartDir, "--set", "profileAdmission.create=sometimes")
	if err == nil || !strings.Contains(out, `profileAdmission.create "sometimes"`) {
		t.Errorf("a bad profileAdmission.create: %v %s", err, out)
	}
}

// The policy lets a namespace pick what profileAdmission.allowed lists for
// it and every profile whose PROFILE_<NAME>_NAMESPACES names it.
func TestThePolicyAllowsWhatTheNodeKeyBinds(t *testing.T) {
	values := goldForTeams + "profileAdmission:\n  allowed: {web: [blue], team-b: [blue]}\n"
	out := render(t, "-f", valuesFile(t, values), "--show-only", "templates/profile-admission-policy.yaml")
	var vap admissionv1.ValidatingAdmissionPolicy
	if err := yaml.UnmarshalStrict([]byte(documents(t, out)["profile-admission-policy.yaml"]), &vap); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ns, profile string
		allowed     bool
	}{
		{"team-a", "gold", true}, {"team-b", "gold", true}, {"team-b", "blue", true}, {"web", "blue", true},
		{"web", "gold", false}, {"team-a", "blue", false}, {"other", "gold", false},
	} {
		in := map[string]any{"object": map[string]any{"metadata": map[string]any{"annotations": map[string]any{"vpc-cni.io/profile": c.profile}}},
			"request": map[string]any{"namespace": c.ns}}
		if matched, allowed, msg := admit(t, &vap, in); !matched || allowed != c.allowed {
			t.Errorf("%s picking %s: matched %v allowed %v (%s); want allowed %v", c.ns, c.profile, matched, allowed, msg, c.allowed)
		}
	}
}

// The chart's notes say who may pick which profile, or warn that any pod
// may pick those no namespace binds when the policy is off.
func TestTheChartsNotesSayWhoMayPickAProfile(t *testing.T) {
	cases := []struct {
		values   string
		want     []string
		unwanted string
	}{
		{goldForTeams, []string{"admission policy vpc-cni-profiles", "team-a: gold", "team-b: gold"}, "WARNING"},
		{goldForTeams + "profileAdmission: {create: false}\n", []string{"WARNING: any pod may pick the network profile blue\n",
			"profileAdmission.create=false"}, "gold"},
		{"config: {PROFILE_GOLD_SNAT: none, PROFILE_BLUE_SNAT: none, PROFILES: gold}\nprofileAdmission: {create: false}\n",
			[]string{"any pod may pick the network profile gold\n"}, "blue"},
		{"profileAdmission: {create: true}\nconfig: {PROFILE_GOLD_SNAT: none}\n", []string{"none: no namespace may pick any profile yet"}, "WARNING"},
		{"", []string{"vpc-cni runs on every Linux node"}, "profile"},
	}
	for _, c := range cases {
		notes := chartNotes(t, valuesFile(t, c.values))
		for _, w := range c.want {
			if !strings.Contains(notes, w) {
				t.Errorf("values %q: the notes lack %q:\n%s", c.values, w, notes)
			}
		}
		if strings.Contains(notes, c.unwanted) {
			t.Errorf("values %q: the notes say %q:\n%s", c.values, c.unwanted, notes)
		}
	}
}

// chartNotes is what `helm install` prints after NOTES:. helm renders the
// notes only for an install, which needs a cluster even in a dry run, so a
// copy of the chart renders its NOTES.txt with tpl, as one more template:
// the same text through the same engine and helpers.
func chartNotes(t *testing.T, values string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	notes, err := os.ReadFile(filepath.Join(chartDir, "templates", "NOTES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	render := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\ndata:\n  notes: {{ tpl (.Files.Get \"notes.txt\") . | toJson }}\n"
	for name, text := range map[string][]byte{"notes.txt": notes, "templates/zz-notes.yaml": []byte(render)} {
		if err := os.WriteFile(filepath.Join(dir, name), text, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := helm(t, "template", "vpc-cni", dir, "--namespace", "kube-system", "-f", values, "--show-only", "templates/zz-notes.yaml")
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal([]byte(out), &cm); err != nil {
		t.Fatal(err)
	}
	return cm.Data["notes"]
}

// The chart finds a profile's keys by the fields settings accepts.
func TestTheChartKnowsEveryProfileField(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chartDir, "templates", "_helpers.tpl"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(data), `define "vpc-cni.profileFields" -}}`)
	line, _, _ := strings.Cut(strings.TrimSpace(rest), "\n")
	got := strings.Split(line, "|")
	want := slices.Clone(settings.ProfileFields)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("_helpers.tpl's vpc-cni.profileFields %v, settings.ProfileFields %v", got, want)
	}
}
