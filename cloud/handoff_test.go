package cloud

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"vpc-cni/internal/testsupport/testenv"
	"vpc-cni/sim/ec2sim"
)

// A handoff is held to the rules its environment variables would meet: a
// container uri that the SDK would refuse in AWS_CONTAINER_CREDENTIALS_FULL_URI,
// or an stsEndpoint in plain http off loopback, is refused before any request
// carries the token; so is a file another user owns or others may write.
func TestHandoffIsCheckedBeforeItIsUsed(t *testing.T) {
	sim := issuedOnly(t)
	tok := ec2sim.MintToken("sts.amazonaws.com", "system:serviceaccount:kube-system:vpc-cni", time.Now().Add(time.Hour))
	webIdentity := func(sts string) string {
		return `{"version":1,"kind":"web-identity","roleArn":"` + testRole + `","token":"` + tok + `","stsEndpoint":"` + sts + `"}`
	}
	container := func(uri string) string {
		return `{"version":1,"kind":"container","uri":"` + uri + `","token":"` + tok + `"}`
	}
	cases := []struct {
		name, text string
		mode       os.FileMode
		uid        int    // -1: ours
		says       string // "": accepted
	}{
		{"uri in http to another host", container("http://192.0.2.1:9/creds"), 0o600, -1, "http only to loopback"},
		{"uri in another scheme", container("file:///etc/shadow"), 0o600, -1, `scheme "file"`},
		{"stsEndpoint in http to another host", webIdentity("http://192.0.2.1:9/sts"), 0o600, -1, "want https, or http only to loopback"},
		{"stsEndpoint without a scheme", webIdentity("192.0.2.1/sts"), 0o600, -1, "want https"},
		{"writable by others", webIdentity(sim.URL() + "/sts"), 0o666, -1, "mode 0666"},
		{"owned by nobody", webIdentity(sim.URL() + "/sts"), 0o600, 65534, "uid 65534"},
		{"stsEndpoint on loopback (the emulator)", webIdentity(sim.URL() + "/sts"), 0o600, -1, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.uid >= 0 {
				testenv.RequireRoot(t, "gives a file to another user")
			}
			path := filepath.Join(t.TempDir(), HandoffFile)
			if err := os.WriteFile(path, []byte(c.text), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, c.mode); err != nil {
				t.Fatal(err)
			}
			if c.uid >= 0 {
				if err := os.Chown(path, c.uid, c.uid); err != nil {
					t.Fatal(err)
				}
			}
			os.Unsetenv("AWS_ENDPOINT_URL_STS") // the handoff's own endpoint, or none
			before := sim.Counters()["STS:AssumeRoleWithWebIdentity"]
			_, err := newClient(t, Options{Handoff: path, HandoffReadOnly: true}).Subnet(testCtx(t), sim.State().SubnetID)
			if c.says == "" {
				if err != nil {
					t.Fatalf("a sound handoff: %v", err)
				}
				return
			}
			wantKind(t, err, KindNoCredentials, "handed off by the vpc-cni pod", path, c.says)
			if n := sim.Counters()["STS:AssumeRoleWithWebIdentity"] - before; n != 0 {
				t.Errorf("a refused handoff reached STS %d times", n)
			}
		})
	}
}

func TestAllowedSTSEndpoint(t *testing.T) {
	for raw, ok := range map[string]bool{
		"https://sts.us-west-2.amazonaws.com": true, "https://vpce-1.sts.us-west-2.vpce.amazonaws.com/": true,
		"http://127.0.0.1:8080/sts": true, "http://[::1]:80": true, "http://localhost:1": true,
		"http://sts.amazonaws.com": false, "http://169.254.170.23": false, "ftp://127.0.0.1": false, "https://": false,
	} {
		if err := allowedSTSEndpoint(raw); (err == nil) != ok {
			t.Errorf("%s: %v, want allowed %v", raw, err, ok)
		}
	}
	if !strings.Contains(allowedContainerURI("http://192.0.2.1/").Error(), "loopback") {
		t.Error("the container rule changed its words")
	}
}
