package settings

import (
	"strings"
	"testing"
)

func TestENIConfigForReadsTheZonesLine(t *testing.T) {
	f, err := ParseFile("cfg", []byte("AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=true\n"+
		"ENI_CONFIG_US_WEST_2A=subnet=subnet-0abc, securityGroups=sg-1;sg-2\n"))
	if err != nil {
		t.Fatal(err)
	}
	in := Inputs{File: f}
	c, ok, err := ENIConfigFor(in, "us-west-2a")
	if err != nil || !ok || c.Subnet != "subnet-0abc" || strings.Join(c.SecurityGroups, " ") != "sg-1 sg-2" ||
		c.Origin != "file cfg:2" {
		t.Fatalf("got %+v ok %v err %v", c, ok, err)
	}
	if _, ok, err := ENIConfigFor(in, "us-west-2b"); ok || err != nil {
		t.Errorf("another zone: ok %v err %v; want none", ok, err)
	}
	eff, err := Resolve(Overrides{}, in)
	if err != nil || !eff.Pool.CustomNetworking || eff.SubnetDiscovery != DiscoveryWhenFull {
		t.Errorf("resolve: custom %v discovery %q err %v", eff.Pool.CustomNetworking, eff.SubnetDiscovery, err)
	}
}

func TestBadENIConfigNamesTheKey(t *testing.T) {
	for _, line := range []string{"subnet-0abc", "subnet=sub-1", "subnet=subnet-1,securityGroups=default",
		"securityGroups=sg-1", "subnet=subnet-1,groups=sg-1"} {
		env := func(k string) (string, bool) { return line, k == "ENI_CONFIG_EU_WEST_1C" }
		_, _, err := ENIConfigFor(Inputs{Env: env}, "eu-west-1c")
		if err == nil || !strings.Contains(err.Error(), "ENI_CONFIG_EU_WEST_1C") {
			t.Errorf("%q: %v; want an error naming ENI_CONFIG_EU_WEST_1C", line, err)
		}
	}
}

func TestSubnetDiscoveryValues(t *testing.T) {
	for text, want := range map[string]string{"true": DiscoveryAlways, "FALSE": DiscoveryNever, "when-full": DiscoveryWhenFull} {
		env := func(k string) (string, bool) { return text, k == SubnetDiscovery }
		eff, err := Resolve(Overrides{}, Inputs{Env: env})
		if err != nil || eff.SubnetDiscovery != want || eff.Value(SubnetDiscovery).Value != want {
			t.Errorf("%s: %q %v; want %q", text, eff.SubnetDiscovery, err, want)
		}
	}
	env := func(k string) (string, bool) { return "sometimes", k == SubnetDiscovery }
	if _, err := Resolve(Overrides{}, Inputs{Env: env}); err == nil || !strings.Contains(err.Error(), SubnetDiscovery) {
		t.Errorf("a bad value: %v", err)
	}
}
