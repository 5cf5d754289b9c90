package ec2sim

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

func getMeta(t *testing.T, c *imds.Client, path string) string {
	t.Helper()
	out, err := c.GetMetadata(ctx, &imds.GetMetadataInput{Path: path})
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer out.Content.Close()
	b, _ := io.ReadAll(out.Content)
	return string(b)
}

func TestIMDSIdentityAndInterfaces(t *testing.T) {
	sim, url := startSim(t, Config{InstanceType: "m5.large", Region: "eu-west-1"})
	c := imdsClient(url)
	st := sim.State()
	primary := st.ENIs[0]
	want := map[string]string{
		"instance-id":                 st.InstanceID,
		"instance-type":               "m5.large",
		"placement/region":            "eu-west-1",
		"placement/availability-zone": "eu-west-1a",
		"local-ipv4":                  "100.64.0.4",
		"mac":                         primary.MAC,
		"network/interfaces/macs":     primary.MAC + "/",
		"network/interfaces/macs/":    primary.MAC + "/",
		"network/interfaces/macs/" + primary.MAC + "/device-number":          "0",
		"network/interfaces/macs/" + primary.MAC + "/interface-id":           primary.ID,
		"network/interfaces/macs/" + primary.MAC + "/local-ipv4s":            "100.64.0.4",
		"network/interfaces/macs/" + primary.MAC + "/subnet-id":              st.SubnetID,
		"network/interfaces/macs/" + primary.MAC + "/vpc-id":                 st.VPCID,
		"network/interfaces/macs/" + primary.MAC + "/subnet-ipv4-cidr-block": "100.64.0.0/20",
		"network/interfaces/macs/" + primary.MAC + "/vpc-ipv4-cidr-blocks":   "100.64.0.0/16",
	}
	for path, v := range want {
		if got := getMeta(t, c, path); got != v {
			t.Errorf("%s: want %q, got %q", path, v, got)
		}
	}
	if keys := getMeta(t, c, "network/interfaces/macs/"+primary.MAC+"/"); !strings.Contains(keys, "local-ipv4s") ||
		strings.Contains(keys, "ipv4-prefix") || !strings.Contains(keys, "security-group-ids") {
		t.Errorf("per-MAC keys: %q", keys)
	}
	region, err := c.GetRegion(ctx, &imds.GetRegionInput{})
	if err != nil || region.Region != "eu-west-1" {
		t.Errorf("GetRegion: %v %v", region, err)
	}
	_, err = c.GetMetadata(ctx, &imds.GetMetadataInput{Path: "no/such/thing"})
	var withStatus interface{ HTTPStatusCode() int }
	if !errorsAs(err, &withStatus) || withStatus.HTTPStatusCode() != 404 {
		t.Fatalf("unknown path: want 404, got %v", err)
	}
	if sim.Counters()["IMDS:token"] != 1 || sim.Counters()["IMDS"] < len(want) {
		t.Fatalf("counters: %v", sim.Counters())
	}
}

func TestIMDSRequiresToken(t *testing.T) {
	_, url := startSim(t, Config{})
	resp := mustDo(t, "GET", url+"/latest/meta-data/instance-id", nil)
	if resp.StatusCode != 401 {
		t.Fatalf("GET without token: want 401, got %d", resp.StatusCode)
	}
	resp = mustDo(t, "PUT", url+"/latest/api/token", nil)
	if resp.StatusCode != 400 {
		t.Fatalf("PUT without TTL: want 400, got %d", resp.StatusCode)
	}
	resp = mustDo(t, "PUT", url+"/latest/api/token", map[string]string{imdsTTLHeader: "60"})
	token, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get(imdsTTLHeader) != "60" || len(token) == 0 {
		t.Fatalf("PUT token: %d %q", resp.StatusCode, token)
	}
	resp = mustDo(t, "GET", url+"/latest/meta-data/instance-id", map[string]string{imdsTokenHeader: string(token)})
	if body, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || string(body) != "i-0123456789abcdef0" {
		t.Fatalf("GET with token: %d %q", resp.StatusCode, body)
	}
	resp = mustDo(t, "GET", url+"/latest/meta-data/instance-id", map[string]string{imdsTokenHeader: "forged"})
	if resp.StatusCode != 401 {
		t.Fatalf("GET with a forged token: want 401, got %d", resp.StatusCode)
	}
}

func mustDo(t *testing.T, method, url string, headers map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestIMDSLag(t *testing.T) {
	clock := newFakeClock()
	sim, url := startSim(t, Config{InstanceType: "m5.large", Clock: clock.Now})
	sim.SetFaults(Faults{IMDSLag: 2 * time.Second})
	c, meta := ec2Client(t, url, false), imdsClient(url)
	eni := createENI(t, c, sim, &ec2.CreateNetworkInterfaceInput{SecondaryPrivateIpAddressCount: aws.Int32(1)})
	attachENI(t, c, sim, aws.ToString(eni.NetworkInterfaceId), 1)
	mac := aws.ToString(eni.MacAddress)
	if macs := getMeta(t, meta, "network/interfaces/macs/"); strings.Contains(macs, mac) {
		t.Fatalf("a just-attached ENI is listed: %q", macs)
	}
	clock.Advance(2 * time.Second)
	if macs := getMeta(t, meta, "network/interfaces/macs/"); !strings.Contains(macs, mac+"/") {
		t.Fatalf("the ENI is not listed after the lag: %q", macs)
	}
	ipsPath := "network/interfaces/macs/" + mac + "/local-ipv4s"
	if ips := getMeta(t, meta, ipsPath); ips != "100.64.0.5\n100.64.0.6" {
		t.Fatalf("local-ipv4s: %q", ips)
	}

	must[*ec2.AssignPrivateIpAddressesOutput](t)(c.AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{
		NetworkInterfaceId: eni.NetworkInterfaceId, SecondaryPrivateIpAddressCount: aws.Int32(1)}))
	must[*ec2.UnassignPrivateIpAddressesOutput](t)(c.UnassignPrivateIpAddresses(ctx, &ec2.UnassignPrivateIpAddressesInput{
		NetworkInterfaceId: eni.NetworkInterfaceId, PrivateIpAddresses: []string{"100.64.0.6"}}))
	if ips := getMeta(t, meta, ipsPath); ips != "100.64.0.5\n100.64.0.6" {
		t.Fatalf("within the lag IMDS must show the old set: %q", ips)
	}
	clock.Advance(2 * time.Second)
	if ips := getMeta(t, meta, ipsPath); ips != "100.64.0.5\n100.64.0.7" {
		t.Fatalf("after the lag: %q", ips)
	}
}

// With no credentials in the environment, the SDK's default chain takes the
// instance role from IMDS and signs EC2 calls with it.
func TestCredentialsFromIMDSRole(t *testing.T) {
	sim, url := startSim(t, Config{})
	for _, kv := range [][2]string{{"AWS_ACCESS_KEY_ID", ""}, {"AWS_SECRET_ACCESS_KEY", ""}, {"AWS_SESSION_TOKEN", ""},
		{"AWS_ACCESS_KEY", ""}, {"AWS_SECRET_KEY", ""}, {"AWS_PROFILE", ""}, {"AWS_WEB_IDENTITY_TOKEN_FILE", ""},
		{"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", ""}, {"AWS_CONTAINER_CREDENTIALS_FULL_URI", ""},
		{"AWS_EC2_METADATA_DISABLED", ""}, {"AWS_CONFIG_FILE", "/dev/null"}, {"AWS_SHARED_CREDENTIALS_FILE", "/dev/null"},
		{"AWS_REGION", "us-west-2"}, {"AWS_ENDPOINT_URL_EC2", url}, {"AWS_EC2_METADATA_SERVICE_ENDPOINT", url}} {
		t.Setenv(kv[0], kv[1])
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.Retryer = NoAPIRetries() })
	if _, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{}); err != nil {
		t.Fatal(err)
	}
	if key := sim.LastAccessKey(); key != "ASIAEC2SIMROLE" {
		t.Fatalf("signed with %q, want the role's key", key)
	}
}
