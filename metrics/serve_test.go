package metrics

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The reference's series carry the figures with aws-node's meaning.
func TestRenderHasTheReferenceSeries(t *testing.T) {
	in := sampleInput()
	in.Figures.Total = 6
	in.Reference = Reference{IPMax: 27, Prefixes: 2, NoAddress: 4, EC2Calls: map[string]int64{"DescribeNetworkInterfaces": 5},
		EC2Errors: []APIError{{API: "DescribeNetworkInterfaces", Code: "UnauthorizedOperation", N: 3}}}
	var b strings.Builder
	if err := Render(&b, in); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"awscni_eni_allocated 2", "awscni_eni_max 3", "awscni_ip_max 27", "awscni_total_ip_addresses 6",
		"awscni_assigned_ip_addresses 2", "awscni_total_ipv4_prefixes 2", "awscni_no_available_ip_addresses 4",
		`awscni_ec2api_req_count{fn="DescribeNetworkInterfaces"} 5`,
		`awscni_aws_api_error_count{api="DescribeNetworkInterfaces",error="UnauthorizedOperation"} 3`,
		"# TYPE awscni_ec2api_req_count counter",
	} {
		if !strings.Contains(b.String(), want+"\n") {
			t.Errorf("missing %q in\n%s", want, b.String())
		}
	}
}

// /healthz fails only after UnhealthyAfter failed passes in a row, names the
// last error, and one good pass heals it.
func TestHealthzFollowsThePasses(t *testing.T) {
	h := &Health{}
	srv := httptest.NewServer(Handler(func() (Input, error) { return sampleInput(), nil }, h))
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != 200 || !strings.Contains(body, "no pass") {
		t.Errorf("before any pass: %d %q", code, body)
	}
	for i := 1; i <= UnhealthyAfter; i++ {
		h.Record(errors.New("ec2:DescribeNetworkInterfaces: not authorized"))
		code, body := get("/healthz")
		if i == UnhealthyAfter {
			if code != http.StatusServiceUnavailable || !strings.Contains(body, "not authorized") {
				t.Errorf("after %d failed passes: %d %q", i, code, body)
			}
		} else if code != 200 {
			t.Errorf("after %d failed passes: %d, want 200", i, code)
		}
	}
	h.Record(nil)
	if code, body := get("/healthz"); code != 200 || !strings.Contains(body, "succeeded") {
		t.Errorf("after a good pass: %d %q", code, body)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "vpc_cni_enis 2\n") {
		t.Errorf("/metrics: %d %q", code, body)
	}
}

// A scrape that cannot read the state says why with a 500, not an empty page.
func TestMetricsScrapeErrorIs500(t *testing.T) {
	srv := httptest.NewServer(Handler(func() (Input, error) { return Input{}, errors.New("no state in /x") }, &Health{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 500 || !strings.Contains(string(b), "no state in /x") {
		t.Errorf("%d %q", resp.StatusCode, b)
	}
}
