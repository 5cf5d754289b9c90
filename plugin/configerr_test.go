package plugin

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/containernetworking/cni/pkg/types"

	"vpc-cni/pool"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// Every configuration error fails ADD with code 7 naming the key and its
// line, and changes nothing: a bad value under a `pool warm` override, and
// the node-rule knobs (which ADD itself does not apply).
func TestAddRefusesEveryConfigurationError(t *testing.T) {
	cases := []struct {
		name, file, want string
		override         bool
	}{
		{"under an override", "# targets\nWARM_IP_TARGET=abc\n", `WARM_IP_TARGET="abc"`, true},
		{"connmark", "WARM_ENI_TARGET=1\nAWS_VPC_K8S_CNI_CONNMARK=0\n", `AWS_VPC_K8S_CNI_CONNMARK="0"`, false},
		{"randomize SNAT", "WARM_ENI_TARGET=1\nAWS_VPC_K8S_CNI_RANDOMIZESNAT=foo\n", `AWS_VPC_K8S_CNI_RANDOMIZESNAT="foo"`, false},
		{"SNAT CIDR", "WARM_ENI_TARGET=1\nAWS_VPC_K8S_CNI_EXCLUDE_SNAT_CIDRS=10.0.0.0/33\n", `AWS_VPC_K8S_CNI_EXCLUDE_SNAT_CIDRS="10.0.0.0/33"`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := newTestNode(t).seed(twoENIs, eni(0, "100.64.0.10"))
			if c.override {
				twelve := 12
				n.update(func(tx *store.Tx) error {
					return tx.PutSettings(store.Settings{Overrides: settings.Overrides{WarmIP: &twelve}})
				})
			}
			cfg := filepath.Join(t.TempDir(), "config")
			if err := os.WriteFile(cfg, []byte(c.file), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := n.run("ADD", n.args("c1", n.conf("1.1.0", map[string]any{"configFile": cfg})))
			wantCode(t, err, types.ErrInvalidNetworkConfig, c.want+" (file "+cfg+":2)")
			if out != "" || len(n.host.pods) != 0 || n.state("100.64.0.10") != pool.Free {
				t.Fatalf("refused ADD changed state: printed %q, pods %v, .10 %s", out, n.host.pods, n.state("100.64.0.10"))
			}
		})
	}
}

// Knobs, which STATUS asks with the store's overrides, does not let an
// override hide the file's bad value.
func TestKnobsRefuseABadValueUnderAnOverride(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(cfg, []byte("WARM_IP_TARGET=abc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := ParseConfig([]byte(`{"name":"n","type":"vpc-cni","configFile":"` + cfg + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	twelve := 12
	_, err = c.Knobs(settings.Overrides{WarmIP: &twelve})
	wantCode(t, err, types.ErrInvalidNetworkConfig, `WARM_IP_TARGET="abc" (file `+cfg+":1)")
}
