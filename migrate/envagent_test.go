package migrate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// policyNote migrates the DaemonSet in data and returns the policy mode's
// note (the mode must be carried).
func policyNote(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	env, err := ReadAWSNodeEnv(path)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := MigrateConfig(env.Vars, ConfigOptions{Source: name, Path: filepath.Join(t.TempDir(), "config"), Agent: env.Agent})
	if err != nil {
		t.Fatal(err)
	}
	v := byName(rep)["NETWORK_POLICY_ENFORCING_MODE"]
	if v.Action != Written {
		t.Fatalf("%s: the mode was not carried: %+v", name, v)
	}
	return v.Note
}

// The reference manifests run the policy agent with
// --enable-network-policy=false: the carried mode's note says policy was
// not enforced on the node; with the switch on, it says it was.
func TestPolicyModeNoteSaysWhetherTheAgentEnforced(t *testing.T) {
	const off, on = "--enable-network-policy=false", "--enable-network-policy=true"
	for _, f := range referenceFiles(t) {
		if !strings.Contains(string(f.data), off) {
			t.Fatalf("%s: the agent's switch is not %s", f.name, off)
		}
		if note := policyNote(t, f.name, f.data); !strings.Contains(note, "NOT enforced") || !strings.Contains(note, off) {
			t.Errorf("%s, switch off: note %q", f.name, note)
		}
		turned := []byte(strings.ReplaceAll(string(f.data), off, on))
		if note := policyNote(t, f.name, turned); !strings.Contains(note, "policy was enforced") {
			t.Errorf("%s, switch on: note %q", f.name, note)
		}
	}
}

// Env lines say nothing of the agent: the note claims neither.
func TestPolicyModeNoteWithoutTheAgentContainer(t *testing.T) {
	note := policyNote(t, "env", []byte("NETWORK_POLICY_ENFORCING_MODE=strict\n"))
	if strings.Contains(note, "enforced") || !strings.Contains(note, "networkPolicy.enabled=true") {
		t.Errorf("note %q", note)
	}
}

// The switch as the agent reads it; a value it would refuse stops the
// migration, naming it.
func TestAgentSwitchFromTheAgentsArgs(t *testing.T) {
	for args, want := range map[string]PolicyAgent{
		`[]`: AgentOff, `["--enable-network-policy"]`: AgentOn, `["-enable-network-policy=1"]`: AgentOn,
		`["--enable-network-policy-x=true"]`: AgentOff, `["enable-network-policy=true"]`: AgentOff,
	} {
		doc := "kind: DaemonSet\nspec: {template: {spec: {containers: [{name: aws-node}, {name: aws-eks-nodeagent, args: " + args + "}]}}}\n"
		env, err := parseDaemonSet([]byte(doc))
		if err != nil || env.Agent != want {
			t.Errorf("args %s: %q %v, want %q", args, env.Agent, err, want)
		}
	}
	doc := "kind: DaemonSet\nspec: {template: {spec: {containers: [{name: aws-node}, {name: aws-eks-nodeagent, args: [--enable-network-policy=maybe]}]}}}\n"
	if _, err := parseDaemonSet([]byte(doc)); err == nil || !strings.Contains(err.Error(), `--enable-network-policy="maybe"`) {
		t.Errorf("a bad switch: %v", err)
	}
}
