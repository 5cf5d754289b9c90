package ec2sim

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzEC2Request: whatever form body arrives, the emulator answers with an
// EC2 status and never panics.
func FuzzEC2Request(f *testing.F) {
	for _, seed := range []string{
		"Action=DescribeNetworkInterfaces&Version=2016-11-15&Filter.1.Name=attachment.instance-id&Filter.1.Value.1=i-0123456789abcdef0",
		"Action=AssignPrivateIpAddresses&NetworkInterfaceId=eni-x&SecondaryPrivateIpAddressCount=3",
		"Action=CreateNetworkInterface&SubnetId=subnet-x&Ipv4PrefixCount=2&ClientToken=t",
		"Action=UnassignPrivateIpAddresses&NetworkInterfaceId=eni-x&PrivateIpAddress.1=100.64.0.9",
		"Action=AttachNetworkInterface&NetworkInterfaceId=eni-x&InstanceId=i-0123456789abcdef0&DeviceIndex=-7",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		sim, err := New(Config{}) // a fresh node per input: runs stay independent
		if err != nil {
			t.Fatal(err)
		}
		h := sim.Handler()
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case 200, 400, 403, 404, 412, 500, 503:
		default:
			t.Fatalf("status %d for %q", rec.Code, body)
		}
	})
}
