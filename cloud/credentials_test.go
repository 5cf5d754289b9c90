package cloud

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"vpc-cni/sim/ec2sim"
)

const testRole = "arn:aws:iam::123456789012:role/vpc-cni"

// issuedOnly starts a node whose EC2 accepts only credentials its STS or
// Pod Identity endpoint issued, with no keys in the environment.
func issuedOnly(t *testing.T) *ec2sim.Sim {
	t.Helper()
	sim := startSim(t, ec2sim.Config{})
	withoutEnvKeys(t)
	t.Setenv("AWS_ENDPOINT_URL_STS", sim.URL()+"/sts")
	sim.SetTrust(ec2sim.Trust{IssuedOnly: true})
	return sim
}

func tokenFile(t *testing.T, aud string, exp time.Time) string {
	return writeTemp(t, "token", ec2sim.MintToken(aud, "system:serviceaccount:kube-system:vpc-cni", exp)+"\n")
}

func TestWebIdentityFromEnvironment(t *testing.T) {
	sim := issuedOnly(t)
	t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", tokenFile(t, "sts.amazonaws.com", time.Now().Add(time.Hour)))
	t.Setenv("AWS_ROLE_ARN", testRole)
	t.Setenv("AWS_ROLE_SESSION_NAME", "node-1")
	c := newClient(t, Options{})
	if _, err := c.Identity(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if n := sim.Counters()["STS:AssumeRoleWithWebIdentity"]; n != 0 {
		t.Fatalf("IMDS alone called STS %d times: credentials must wait for an EC2 call", n)
	}
	got := signedWith(t, sim)
	if !strings.HasPrefix(got, "ASIA") || sim.Counters()["STS:AssumeRoleWithWebIdentity"] != 1 {
		t.Errorf("signed with %q after %d STS calls, want issued credentials after 1", got,
			sim.Counters()["STS:AssumeRoleWithWebIdentity"])
	}
}

func TestWebIdentityFailuresNameTheCause(t *testing.T) {
	sim := issuedOnly(t)
	t.Setenv("AWS_ROLE_ARN", testRole)
	for name, tc := range map[string]struct {
		file  string
		parts []string
	}{
		"expired":        {tokenFile(t, "sts.amazonaws.com", time.Now().Add(-time.Minute)), []string{"ExpiredTokenException", "Token expired"}},
		"wrong audience": {tokenFile(t, "pods.eks.amazonaws.com", time.Now().Add(time.Hour)), []string{"InvalidIdentityToken", "audience"}},
		"missing file":   {filepath.Join(t.TempDir(), "gone"), []string{"cannot read the token file", "no such file"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", tc.file)
			c := newClient(t, Options{})
			_, err := c.Subnet(testCtx(t), sim.State().SubnetID)
			wantKind(t, err, KindNoCredentials, append(tc.parts, "web identity (AWS_WEB_IDENTITY_TOKEN_FILE", testRole)...)
		})
	}
	if n := sim.Counters()["DescribeSubnets"]; n != 0 {
		t.Errorf("a failed credential source still reached EC2 %d times", n)
	}
}

func TestPodIdentity(t *testing.T) {
	sim := issuedOnly(t)
	t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", sim.URL()+ec2sim.PodIdentityPath)
	t.Setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", tokenFile(t, "pods.eks.amazonaws.com", time.Now().Add(time.Hour)))
	if got := signedWith(t, sim); !strings.HasPrefix(got, "ASIA") || sim.Counters()["PodIdentity:GetCredentials"] != 1 {
		t.Errorf("signed with %q, %v", got, sim.Counters())
	}
	t.Setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", tokenFile(t, "sts.amazonaws.com", time.Now().Add(time.Hour)))
	_, err := newClient(t, Options{}).Subnet(testCtx(t), sim.State().SubnetID)
	wantKind(t, err, KindNoCredentials, "container credentials (AWS_CONTAINER_CREDENTIALS_FULL_URI", "audience", "Pod Identity agent")
}

func TestContainerURIMustBeLocalOverHTTP(t *testing.T) {
	sim := issuedOnly(t)
	t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://192.0.2.1/creds")
	_, err := newClient(t, Options{}).Subnet(testCtx(t), sim.State().SubnetID)
	wantKind(t, err, KindNoCredentials, "AWS_CONTAINER_CREDENTIALS_FULL_URI", "http only to loopback")
}

func TestAssumeRoleProfiles(t *testing.T) {
	sim := issuedOnly(t)
	tok := tokenFile(t, "sts.amazonaws.com", time.Now().Add(time.Hour))
	t.Setenv("AWS_CONFIG_FILE", writeTemp(t, "config", `[profile chained]
role_arn = `+testRole+`
source_profile = base
[profile base]
role_arn = arn:aws:iam::123456789012:role/base
source_profile = keys
[profile keys]
aws_access_key_id = AKIDSOURCE
aws_secret_access_key = source-secret
[profile env]
role_arn = `+testRole+`
credential_source = Environment
[profile web]
role_arn = `+testRole+`
web_identity_token_file = `+tok+`
[profile bare]
role_arn = `+testRole+`
`))
	for awsProfileName, action := range map[string]string{"chained": "STS:AssumeRole", "web": "STS:AssumeRoleWithWebIdentity"} {
		t.Setenv("AWS_PROFILE", awsProfileName)
		sim.ResetCounters()
		if got := signedWith(t, sim); !strings.HasPrefix(got, "ASIA") || sim.Counters()[action] == 0 {
			t.Errorf("profile %s: signed with %q, counters %v", awsProfileName, got, sim.Counters())
		}
	}
	t.Setenv("AWS_PROFILE", "env")
	_, err := newClient(t, Options{}).Subnet(testCtx(t), sim.State().SubnetID)
	wantKind(t, err, KindNoCredentials, "credential_source Environment", "AWS_ACCESS_KEY_ID")
	t.Setenv("AWS_PROFILE", "bare")
	_, err = newClient(t, Options{}).Subnet(testCtx(t), sim.State().SubnetID)
	wantKind(t, err, KindNoCredentials, `profile "bare"`, "no source_profile")
}

func TestHandoffCarriesTheTokenToTheInstanceRoleProcess(t *testing.T) {
	sim := issuedOnly(t)
	path := filepath.Join(t.TempDir(), HandoffFile)
	tok := tokenFile(t, "sts.amazonaws.com", time.Now().Add(time.Hour))
	t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", tok)
	t.Setenv("AWS_ROLE_ARN", testRole)
	pod := newClient(t, Options{Handoff: path})
	if _, err := pod.Identity(testCtx(t)); err != nil { // a pass at rest: IMDS only
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("handoff after a pass at rest: %v, %v; want a 0600 file", fi, err)
	}
	if n := sim.Counters()["STS:AssumeRoleWithWebIdentity"]; n != 0 {
		t.Errorf("writing the handoff called STS %d times", n)
	}
	os.Unsetenv("AWS_WEB_IDENTITY_TOKEN_FILE")
	os.Unsetenv("AWS_ROLE_ARN")
	os.Unsetenv("AWS_ENDPOINT_URL_STS") // the handoff carries the pod's
	plugin := newClient(t, Options{Handoff: path})
	if _, err := plugin.Subnet(testCtx(t), sim.State().SubnetID); err != nil {
		t.Fatalf("the plugin with the handoff: %v", err)
	}
	if src, _ := plugin.CredentialSource(testCtx(t)); !strings.Contains(src, "handed off by the vpc-cni pod") {
		t.Errorf("source %q", src)
	}
	if err := os.WriteFile(path, []byte(`{"version":1,"kind":"web-identity","roleArn":"`+testRole+`","token":"`+
		ec2sim.MintToken("sts.amazonaws.com", "system:serviceaccount:kube-system:vpc-cni", time.Now().Add(-time.Second))+
		`","stsEndpoint":"`+sim.URL()+`/sts"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := newClient(t, Options{Handoff: path}).Subnet(testCtx(t), sim.State().SubnetID)
	wantKind(t, err, KindNoCredentials, "handed off by the vpc-cni pod", "ExpiredTokenException", "is the vpc-cni DaemonSet pod running")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	_, err = newClient(t, Options{Handoff: path}).Subnet(testCtx(t), sim.State().SubnetID)
	wantKind(t, err, KindNoCredentials, "AuthFailure") // the instance role, which this EC2 refuses
}

// The SDK's default chain order: env keys, env web identity, the profile,
// container credentials, the instance role.
func TestCredentialChainOrder(t *testing.T) {
	full := map[string]string{
		"AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "s",
		"AWS_WEB_IDENTITY_TOKEN_FILE": "/t", "AWS_ROLE_ARN": testRole,
		"AWS_PROFILE":                        "p",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://169.254.170.23/v1/credentials",
	}
	prof := awsProfile{name: "p", named: true, config: map[string]string{"aws_access_key_id": "PROF", "aws_secret_access_key": "x"}}
	for _, step := range []struct {
		drop []string
		want string
	}{
		{nil, "keys (EnvConfigCredentials)"},
		{[]string{"AWS_ACCESS_KEY_ID"}, "web identity (AWS_WEB_IDENTITY_TOKEN_FILE"},
		{[]string{"AWS_WEB_IDENTITY_TOKEN_FILE"}, "keys ("},
		{[]string{"AWS_PROFILE"}, "container credentials (AWS_CONTAINER_CREDENTIALS_FULL_URI"},
		{[]string{"AWS_CONTAINER_CREDENTIALS_FULL_URI"}, "the instance role"},
	} {
		for _, k := range step.drop {
			delete(full, k)
		}
		p := awsProfile{name: "default"}
		if full["AWS_PROFILE"] != "" {
			p = prof
		}
		got := chooseCredentials(func(k string) string { return full[k] }, p)
		if d := got.describe(); got.Err != nil || !strings.HasPrefix(d, step.want) {
			t.Errorf("without %v: %q (%v), want %q…", step.drop, d, got.Err, step.want)
		}
	}
}
