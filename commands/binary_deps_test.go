package commands

import (
	"bytes"
	"os"
	"testing"
)

// Test-only dependencies (Prometheus's parser for the metrics tests, the
// Kubernetes API types for the manifest tests) must not reach the binary
// every plugin run loads.
func TestBinaryLinksNoTestOnlyDependency(t *testing.T) {
	bin, err := os.ReadFile(vpcctl)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(bin, []byte("github.com/urfave/cli/v2.")) {
		t.Fatal("no urfave/cli symbol in the binary: the checks below would prove nothing")
	}
	for _, pkg := range []string{"github.com/prometheus/", "k8s.io/api/", "k8s.io/apimachinery/", "sigs.k8s.io/yaml"} {
		if bytes.Contains(bin, []byte(pkg)) {
			t.Errorf("the binary links %s, a test-only dependency", pkg)
		}
	}
}
