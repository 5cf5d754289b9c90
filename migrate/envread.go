package migrate

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"

	"vpc-cni/internal/usage"
)

// EnvVar is one variable of the aws-node container's env as the DaemonSet
// gives it: a value, or a reference (valueFrom) that only the API resolves.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	From  string `json:"valueFrom,omitempty"` // what valueFrom names; Value is then unknown
}

// AWSNodeEnv is what migrate reads of aws-node's DaemonSet: the aws-node
// container's env and whether its policy agent enforced policy.
type AWSNodeEnv struct {
	Vars  []EnvVar
	Agent PolicyAgent
}

// ReadAWSNodeEnv reads the aws-node container's env from path: the
// DaemonSet as `kubectl -n kube-system get ds aws-node -o yaml` prints it
// (or a manifest holding it among other documents, or a List), or
// KEY=VALUE lines (`kubectl set env ds/aws-node --list` prints those). Any
// problem is the caller's to fix (exit 2).
func ReadAWSNodeEnv(path string) (AWSNodeEnv, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return AWSNodeEnv{}, usage.Errorf("--aws-node-env %s: no such file (save it with: kubectl -n kube-system get ds aws-node -o yaml > %s)", path, path)
	}
	if err != nil {
		return AWSNodeEnv{}, usage.Wrap(fmt.Errorf("--aws-node-env: %w", err))
	}
	var env AWSNodeEnv
	if envLines(data) {
		env.Vars, err = parseEnvLines(data)
	} else {
		env, err = parseDaemonSet(data)
	}
	if err != nil {
		return AWSNodeEnv{}, usage.Wrap(fmt.Errorf("--aws-node-env %s: %w", path, err))
	}
	return env, nil
}

// envLine is compiled on first use: every plugin start runs the package
// initialisers of the whole binary, and only vpcctl migrate reads env lines.
var envLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(export\s+)?[A-Za-z_][A-Za-z0-9_]*=`) })

// envLines says whether the first line that is not blank or a comment is
// KEY=VALUE, which no YAML document starts with.
func envLines(data []byte) bool {
	for _, l := range strings.Split(string(data), "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			return envLine().MatchString(t)
		}
	}
	return false
}

// fromComment is how `kubectl set env --list` shows a valueFrom variable.
var fromComment = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^#\s*([A-Za-z_][A-Za-z0-9_]*) from (.+)$`)
})

// containerHeader is the line `kubectl set env --list` prints before each
// container's variables: "# DaemonSet aws-node, container aws-node".
var containerHeader = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^#\s*\S+ \S+, container (\S+)$`)
})

// awsNodeContainer is the container of the DaemonSet whose variables migrate reads.
const awsNodeContainer = "aws-node"

// parseEnvLines reads KEY=VALUE lines. A listing of several containers (each
// under its header) contributes only the aws-node container's lines, so a
// variable of the policy agent's container is never taken as aws-node's.
func parseEnvLines(data []byte) ([]EnvVar, error) {
	var out []EnvVar
	seen := map[string]int{}
	headers, inAWSNode, sawAWSNode := false, true, false
	for i, l := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(l)
		if m := containerHeader().FindStringSubmatch(t); m != nil {
			headers = true
			inAWSNode = m[1] == awsNodeContainer
			sawAWSNode = sawAWSNode || inAWSNode
			continue
		}
		if !inAWSNode {
			continue
		}
		v, err := parseEnvLine(t, i+1, seen)
		if err != nil {
			return nil, err
		}
		if v.Name != "" {
			out = append(out, v)
		}
	}
	if headers && !sawAWSNode {
		return nil, fmt.Errorf("the listing has no container named %s (is it `kubectl -n kube-system set env ds/aws-node --list`?)", awsNodeContainer)
	}
	return out, nil
}

// parseEnvLine reads one line: a variable, a valueFrom comment, or nothing
// (a blank line or another comment: the zero EnvVar).
func parseEnvLine(t string, line int, seen map[string]int) (EnvVar, error) {
	if m := fromComment().FindStringSubmatch(t); m != nil {
		return EnvVar{Name: m[1], From: m[2]}, nil
	}
	if t == "" || strings.HasPrefix(t, "#") {
		return EnvVar{}, nil
	}
	if !envLine().MatchString(t) {
		return EnvVar{}, fmt.Errorf("line %d: %q is not a KEY=VALUE line", line, t)
	}
	k, v, _ := strings.Cut(strings.TrimPrefix(t, "export "), "=")
	k = strings.TrimSpace(k)
	if prev, dup := seen[k]; dup {
		return EnvVar{}, fmt.Errorf("line %d: %s is already set on line %d", line, k, prev)
	}
	seen[k] = line
	return EnvVar{Name: k, Value: unquoteEnv(strings.TrimSpace(v))}, nil
}

func unquoteEnv(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// parseDaemonSet finds the DaemonSet with an aws-node container among the
// documents (and List items) and reads that container's env, and the
// policy agent's switch from the agent's container beside it.
func parseDaemonSet(data []byte) (AWSNodeEnv, error) {
	docs, err := parseYAMLDocs(data)
	if err != nil {
		return AWSNodeEnv{}, err
	}
	for _, obj := range objects(docs) {
		if obj["kind"] != "DaemonSet" {
			continue
		}
		spec := dig(obj, "spec", "template", "spec")
		containers, _ := spec["containers"].([]any)
		if c := container(containers, awsNodeContainer); c != nil {
			vars, err := containerEnv(c)
			if err != nil {
				return AWSNodeEnv{}, err
			}
			agent, err := agentSwitch(container(containers, agentContainer))
			return AWSNodeEnv{Vars: vars, Agent: agent}, err
		}
	}
	return AWSNodeEnv{}, errors.New("no DaemonSet with a container named aws-node (is it `kubectl -n kube-system get ds aws-node -o yaml`?)")
}

// container is the container named name, or nil.
func container(containers []any, name string) map[string]any {
	for _, c := range containers {
		if c, _ := c.(map[string]any); c["name"] == name {
			return c
		}
	}
	return nil
}

// objects flattens Lists into their items.
func objects(docs []any) []map[string]any {
	var out []map[string]any
	for _, d := range docs {
		m, _ := d.(map[string]any)
		if items, ok := m["items"].([]any); ok && strings.HasSuffix(fmt.Sprint(m["kind"]), "List") {
			for _, it := range items {
				if o, ok := it.(map[string]any); ok {
					out = append(out, o)
				}
			}
			continue
		}
		if m != nil {
			out = append(out, m)
		}
	}
	return out
}

func dig(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		m, _ = m[k].(map[string]any)
	}
	return m
}

func containerEnv(c map[string]any) ([]EnvVar, error) {
	var out []EnvVar
	env, _ := c["env"].([]any)
	for i, e := range env {
		m, _ := e.(map[string]any)
		name, _ := m["name"].(string)
		if name == "" {
			return nil, fmt.Errorf("the aws-node container's env entry %d has no name", i+1)
		}
		if u, ok := m["value"].(unreadYAML); ok {
			return nil, fmt.Errorf("env %s: its value %q is an anchor, alias or tag, which this reader does not resolve: write the value itself", name, string(u))
		}
		v := EnvVar{Name: name, Value: fmt.Sprint(orString(m["value"]))}
		if from, ok := m["valueFrom"].(map[string]any); ok {
			v.Value, v.From = "", describeFrom(from)
		}
		out = append(out, v)
	}
	if from, ok := c["envFrom"].([]any); ok && len(from) > 0 {
		for _, f := range from {
			fm, _ := f.(map[string]any)
			out = append(out, EnvVar{Name: "(envFrom)", From: describeFrom(fm)})
		}
	}
	return out, nil
}

func orString(v any) any {
	if v == nil {
		return ""
	}
	return v
}

// describeFrom names a valueFrom (or envFrom) reference: "fieldRef
// fieldPath=spec.nodeName".
func describeFrom(from map[string]any) string {
	var parts []string
	for kind, ref := range from {
		p := kind
		if rm, ok := ref.(map[string]any); ok {
			var kv []string
			for k, v := range rm {
				kv = append(kv, fmt.Sprintf("%s=%v", k, v))
			}
			sort.Strings(kv)
			p += " " + strings.Join(kv, ",")
		}
		parts = append(parts, p)
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}
