package deploy

import (
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"
)

// The network profiles' admission policy, rendered as the chart renders it,
// checked statically: it decodes strictly, and its CEL (compiled and run
// with cel-go and the strings library, as the API server has them, on the
// variables the API server binds: object, request, variables) admits a pod
// of a namespace allowed its profile, refuses one that is not, and never
// looks at a pod without the annotation. A kube-apiserver run of the same
// policy is the cluster tier's.
func TestProfileAdmissionPolicy(t *testing.T) {
	out := render(t, "--set", "profileAdmission.create=true", "--set-json", `profileAdmission.allowed={"web":["gold","blue"],"payments":["pci"]}`,
		"--show-only", "templates/profile-admission-policy.yaml")
	var vap admissionv1.ValidatingAdmissionPolicy
	if err := yaml.UnmarshalStrict([]byte(documents(t, out)["profile-admission-policy.yaml"]), &vap); err != nil {
		t.Fatal(err)
	}
	pod := func(ns string, annotations map[string]any) map[string]any {
		meta := map[string]any{"name": "p", "namespace": ns}
		if annotations != nil {
			meta["annotations"] = annotations
		}
		return map[string]any{"object": map[string]any{"metadata": meta}, "request": map[string]any{"namespace": ns}}
	}
	cases := []struct {
		name    string
		in      map[string]any
		matched bool
		allowed bool
	}{
		{"allowed profile", pod("web", map[string]any{"vpc-cni.io/profile": "gold"}), true, true},
		{"the other allowed profile", pod("web", map[string]any{"vpc-cni.io/profile": "blue"}), true, true},
		{"a profile of another namespace", pod("web", map[string]any{"vpc-cni.io/profile": "pci"}), true, false},
		{"a namespace not listed", pod("batch", map[string]any{"vpc-cni.io/profile": "gold"}), true, false},
		{"no profile annotation", pod("batch", map[string]any{"team": "x"}), false, true},
		{"no annotations", pod("batch", nil), false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			matched, allowed, msg := admit(t, &vap, c.in)
			if matched != c.matched || matched && allowed != c.allowed {
				t.Fatalf("matched %v allowed %v (%s); want matched %v allowed %v", matched, allowed, msg, c.matched, c.allowed)
			}
			if matched && !allowed && (!strings.Contains(msg, "namespace "+c.in["request"].(map[string]any)["namespace"].(string)) || !strings.Contains(msg, "network profile")) {
				t.Fatalf("message %q does not name the namespace and the profile", msg)
			}
		})
	}
}

// The plain manifest (the chart's render with no namespace allowed any
// profile) refuses every pod that picks one.
func TestProfileAdmissionManifestRefusesEveryProfileByDefault(t *testing.T) {
	out := render(t, "--set", "profileAdmission.create=true", "--show-only", "templates/profile-admission-policy.yaml")
	var vap admissionv1.ValidatingAdmissionPolicy
	if err := yaml.UnmarshalStrict([]byte(documents(t, out)["profile-admission-policy.yaml"]), &vap); err != nil {
		t.Fatal(err)
	}
	in := map[string]any{"object": map[string]any{"metadata": map[string]any{"annotations": map[string]any{"vpc-cni.io/profile": "gold"}}},
		"request": map[string]any{"namespace": "web"}}
	if matched, allowed, _ := admit(t, &vap, in); !matched || allowed {
		t.Fatalf("matched %v allowed %v: the default allows no namespace any profile", matched, allowed)
	}
}

// admit evaluates the policy's match conditions, variables (in order) and
// validations on in, as the API server does.
func admit(t *testing.T, vap *admissionv1.ValidatingAdmissionPolicy, in map[string]any) (matched, allowed bool, msg string) {
	t.Helper()
	env, err := cel.NewEnv(cel.Variable("object", cel.DynType), cel.Variable("request", cel.DynType),
		cel.Variable("variables", cel.MapType(cel.StringType, cel.DynType)), ext.Strings())
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]any{}
	act := map[string]any{"object": in["object"], "request": in["request"], "variables": vars}
	for _, m := range vap.Spec.MatchConditions {
		if !evalBool(t, env, m.Expression, act) {
			return false, true, ""
		}
	}
	for _, v := range vap.Spec.Variables {
		vars[v.Name] = eval(t, env, v.Expression, act)
	}
	for _, v := range vap.Spec.Validations {
		if !evalBool(t, env, v.Expression, act) {
			return true, false, eval(t, env, v.MessageExpression, act).(string)
		}
	}
	return true, true, ""
}

func eval(t *testing.T, env *cel.Env, expr string, act map[string]any) any {
	t.Helper()
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		t.Fatalf("%q does not compile: %v", expr, iss.Err())
	}
	prg, err := env.Program(ast)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := prg.Eval(act)
	if err != nil {
		t.Fatalf("%q: %v", expr, err)
	}
	return out.Value()
}

func evalBool(t *testing.T, env *cel.Env, expr string, act map[string]any) bool {
	t.Helper()
	b, ok := eval(t, env, expr, act).(bool)
	if !ok {
		t.Fatalf("%q is not a boolean", expr)
	}
	return b
}
