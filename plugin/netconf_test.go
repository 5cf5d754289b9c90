package plugin

import (
	"testing"

	"github.com/containernetworking/cni/pkg/types"
)

// A standard key of the wrong type is an invalid configuration (code 7)
// that names the key.
func TestParseConfigNamesAStandardKeyOfTheWrongType(t *testing.T) {
	for key, val := range map[string]string{
		"name": `5`, "cniVersion": `1`, "type": `true`, "capabilities": `"x"`, "ipam": `5`, "dns": `[]`,
		"prevResult": `5`, "cni.dev/valid-attachments": `{}`,
	} {
		conf := `{"cniVersion": "1.1.0", "name": "net", "type": "vpc-cni", "` + key + `": ` + val + `}`
		_, err := ParseConfig([]byte(conf))
		wantCode(t, err, types.ErrInvalidNetworkConfig, `key "`+key+`"`)
	}
}

// encoding/json matches a struct's keys in any case; so does ParseConfig.
func TestParseConfigTakesStandardKeysInAnyCase(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"CNIVersion": "1.0.0", "NAME": "net", "Type": "vpc-cni"}`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Network != "net" || cfg.CNIVersion != "1.0.0" || cfg.Delegate {
		t.Fatalf("network %q, version %q, delegate %v", cfg.Network, cfg.CNIVersion, cfg.Delegate)
	}
	cfg, err = ParseConfig([]byte(`{"cniVersion": "1.1.0", "name": "net", "type": "vpc-cni",
		"cni.dev/valid-attachments": [{"containerID": "c1", "ifname": "eth0"}],
		"prevResult": {"ips": [{"address": "100.64.0.9/32"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Valid) != 1 || cfg.Valid[0].ContainerID != "c1" || cfg.PrevResult == nil {
		t.Fatalf("valid attachments %v, prevResult %v", cfg.Valid, cfg.PrevResult)
	}
}
