package commands

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"vpc-cni/internal/testsupport/simtest"
	"vpc-cni/internal/testsupport/testenv"
	"vpc-cni/sim/ec2sim"
)

// vpcctl is the binary under test, built once by TestMain.
var vpcctl string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "vpcctl-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	vpcctl = filepath.Join(dir, "vpcctl")
	if err := buildWithMakefile(dir); err != nil {
		fmt.Fprintln(os.Stderr, "building vpcctl:", err)
		os.Exit(1)
	}
	code := testenv.Run(m)
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// buildWithMakefile builds the binary that ships: `make build` with its
// flags (static, stripped, the build tags), into dir.
func buildWithMakefile(dir string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = "/usr/local/go/bin/go"
	}
	gomod, err := exec.Command(goBin, "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	out, err := exec.Command("make", "-s", "-C", root, "build", "BIN="+dir, "GO="+goBin).CombinedOutput()
	if err != nil {
		return fmt.Errorf("make build: %v\n%s", err, out)
	}
	return nil
}

// run is one vpcctl invocation: its exit code and output.
type run struct {
	code           int
	stdout, stderr string
}

// vpc runs the binary with exactly env (plus PATH), never the host's AWS setup.
func vpc(t *testing.T, env []string, args ...string) run {
	t.Helper()
	cmd := exec.Command(vpcctl, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := run{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running vpcctl: %v", err)
	}
	return r
}

func (r run) want(t *testing.T, code int, says ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
	for _, s := range says {
		if !strings.Contains(r.stdout+r.stderr, s) {
			t.Errorf("output lacks %q\nstdout: %s\nstderr: %s", s, r.stdout, r.stderr)
		}
	}
}

// newSim starts an emulated node; instance types are chosen so the tests
// never need a secondary ENI (the CLI's kernel host would look for its link).
func newSim(t *testing.T, instanceType string) (*ec2sim.Sim, []string) {
	t.Helper()
	sim, err := ec2sim.New(ec2sim.Config{InstanceType: instanceType})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	return sim, append(sim.Env(), "AWS_MAX_ATTEMPTS=1")
}

func with(env []string, kv ...string) []string {
	out := []string{}
	for _, e := range env {
		keep := true
		for _, n := range kv {
			k, _, _ := strings.Cut(n, "=")
			if strings.HasPrefix(e, k+"=") {
				keep = false
			}
		}
		if keep {
			out = append(out, e)
		}
	}
	return append(out, kv...)
}

// simHeld counts the emulated node's attached ENIs and pod addresses in EC2.
var simHeld = simtest.Held
