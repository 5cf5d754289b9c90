package deploy

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The IAM policy allows exactly the EC2 operations the cloud package calls:
// read from the code (every h.client().<Op>( call on the EC2 client), not a
// second hand-written list.
func TestIAMPolicyIsWhatTheCodeCalls(t *testing.T) {
	called := ec2OperationsCalled(t, "../cloud")
	if len(called) < 5 {
		t.Fatalf("found only %v in cloud/: the parser below misses calls", called)
	}
	var policy struct {
		Statement []struct {
			Effect   string
			Action   []string
			Resource string
		}
	}
	data, err := os.ReadFile("iam-policy.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &policy); err != nil {
		t.Fatalf("iam-policy.json: %v", err)
	}
	var allowed []string
	for _, s := range policy.Statement {
		if s.Effect != "Allow" {
			t.Errorf("statement %+v: only Allow statements expected", s)
		}
		for _, a := range s.Action {
			op, ok := strings.CutPrefix(a, "ec2:")
			if !ok {
				t.Errorf("action %s is not an EC2 action", a)
			}
			allowed = append(allowed, op)
		}
	}
	slices.Sort(allowed)
	if !slices.Equal(allowed, called) {
		t.Errorf("iam-policy.json allows %v\nthe code calls         %v", allowed, called)
	}
}

// ec2OperationsCalled parses dir's non-test Go files for calls of the form
// x.client().Op(...), the one way cloud reaches the *ec2.Client.
func ec2OperationsCalled(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if op, ok := ec2Call(n); ok {
				ops[op] = true
			}
			return true
		})
	}
	out := make([]string, 0, len(ops))
	for op := range ops {
		out = append(out, op)
	}
	slices.Sort(out)
	return out
}

// ec2Call matches <expr>.client().<Op>(...).
func ec2Call(n ast.Node) (string, bool) {
	call, ok := n.(*ast.CallExpr)
	if !ok {
		return "", false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return "", false
	}
	inner, ok := sel.X.(*ast.CallExpr)
	if !ok {
		return "", false
	}
	clientSel, ok := inner.Fun.(*ast.SelectorExpr)
	if !ok || clientSel.Sel.Name != "client" || len(inner.Args) != 0 {
		return "", false
	}
	return sel.Sel.Name, true
}
