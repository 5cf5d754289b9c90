package ec2sim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// TestStartAndEnv runs the emulator on a real port and points the SDK at it
// the way the binary is pointed: through the environment Env returns.
func TestStartAndEnv(t *testing.T) {
	sim, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	if !strings.HasPrefix(sim.URL(), "http://127.0.0.1:") {
		t.Fatalf("URL: %q", sim.URL())
	}
	for _, kv := range sim.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Setenv("AWS_PROFILE", "")
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.Retryer = NoAPIRetries() })
	out, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{})
	if err != nil || len(out.Reservations) != 1 {
		t.Fatalf("DescribeInstances through Env: %v", err)
	}
	if sim.LastAccessKey() != "AKIDEC2SIM" {
		t.Fatalf("signed with %q", sim.LastAccessKey())
	}
}

func postJSON(t *testing.T, url string, body any) int {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func getJSON(t *testing.T, url string, into any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		t.Fatal(err)
	}
}

func TestControlAPI(t *testing.T) {
	sim, url := startSim(t, Config{})
	if code := postJSON(t, url+"/_sim/faults", map[string]any{"throttleRate": 0.25, "latency": "1ms", "imdsLag": "2s", "seed": 3}); code != 200 {
		t.Fatalf("faults: %d", code)
	}
	if f := sim.CurrentFaults(); f.ThrottleRate != 0.25 || f.Latency != time.Millisecond || f.IMDSLag != 2*time.Second || f.Seed != 3 {
		t.Fatalf("faults: %+v", f)
	}
	var f Faults
	getJSON(t, url+"/_sim/faults", &f)
	if f.IMDSLag != 2*time.Second {
		t.Fatalf("GET faults: %+v", f)
	}
	postJSON(t, url+"/_sim/faults", map[string]any{})
	postJSON(t, url+"/_sim/subnet-free", map[string]any{"free": 7})
	postJSON(t, url+"/_sim/fail-next", map[string]any{"action": "DescribeSubnets", "code": "InternalError", "times": 1})
	postJSON(t, url+"/_sim/deny", map[string]any{"action": "CreateTags"})
	if code := postJSON(t, url+"/_sim/subnet-free", map[string]any{}); code != 400 {
		t.Fatalf("subnet-free without free: %d", code)
	}

	c, st0 := ec2Client(t, url, false), sim.State()
	_, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	wantCode(t, err, "InternalError", 500)
	_, err = c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{st0.ENIs[0].ID},
		Tags: []types.Tag{{Key: aws.String("k"), Value: aws.String("v")}}})
	wantCode(t, err, "UnauthorizedOperation", 403)

	var st State
	getJSON(t, url+"/_sim/state", &st)
	if st.SubnetFree != 7 || len(st.ENIs) != 1 || !st.ENIs[0].PrimaryIP.IsValid() || st.ENIs[0].DeviceIndex != 0 {
		t.Fatalf("state: %+v", st)
	}
	var counters map[string]int
	getJSON(t, url+"/_sim/counters", &counters)
	if counters["DescribeSubnets"] != 1 || counters["CreateTags"] != 1 {
		t.Fatalf("counters: %v", counters)
	}
	postJSON(t, url+"/_sim/reset-counters", nil)
	if len(sim.Counters()) != 0 {
		t.Fatalf("counters after reset: %v", sim.Counters())
	}
}
