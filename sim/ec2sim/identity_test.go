package ec2sim

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
)

const simSubject = "system:serviceaccount:kube-system:vpc-cni"

// defaultChainEC2 is the SDK's own default configuration (LoadDefaultConfig)
// on the emulator, with the credential variables the test set.
func defaultChainEC2(t *testing.T, url string, env map[string]string) *ec2.Client {
	t.Helper()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
		"AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("AWS_REGION", "us-west-2")
	t.Setenv("AWS_ENDPOINT_URL_STS", url+"/sts")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for k, v := range env {
		t.Setenv(k, v)
	}
	cfg, err := config.LoadDefaultConfig(context.Background(), config.WithSharedConfigFiles([]string{}),
		config.WithSharedCredentialsFiles([]string{}), config.WithRetryMaxAttempts(1))
	if err != nil {
		t.Fatal(err)
	}
	return ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(url) })
}

func writeToken(t *testing.T, aud string, exp time.Time) string {
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(MintToken(aud, simSubject, exp)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func apiCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

func TestSDKWebIdentityAgainstTheEmulator(t *testing.T) {
	clock := newFakeClock()
	sim, url := startSim(t, Config{Clock: clock.Now})
	sim.SetTrust(Trust{IssuedOnly: true})
	ctx := context.Background()
	if _, err := ec2Client(t, url, false).DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{}); apiCode(err) != "AuthFailure" {
		t.Fatalf("static keys under IssuedOnly: %v, want AuthFailure", err)
	}
	for name, tc := range map[string]struct {
		aud  string
		exp  time.Time
		want string
	}{
		"valid":          {"sts.amazonaws.com", clock.Now().Add(time.Hour), ""},
		"expired":        {"sts.amazonaws.com", clock.Now().Add(-time.Second), "ExpiredTokenException"},
		"wrong audience": {"pods.eks.amazonaws.com", clock.Now().Add(time.Hour), "InvalidIdentityToken"},
	} {
		api := defaultChainEC2(t, url, map[string]string{"AWS_WEB_IDENTITY_TOKEN_FILE": writeToken(t, tc.aud, tc.exp),
			"AWS_ROLE_ARN": "arn:aws:iam::123456789012:role/vpc-cni"})
		_, err := api.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
		if (tc.want == "" && err != nil) || (tc.want != "" && !strings.Contains(fmtErr(err), tc.want)) {
			t.Errorf("%s: err %v, want %q", name, err, tc.want)
		}
	}
	if got := sim.LastAccessKey(); !strings.HasPrefix(got, "ASIA") {
		t.Errorf("EC2 signed with %q, want STS-issued ASIA…", got)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestSDKPodIdentityAgainstTheEmulator(t *testing.T) {
	sim, url := startSim(t, Config{})
	sim.SetTrust(Trust{IssuedOnly: true})
	api := defaultChainEC2(t, url, map[string]string{"AWS_CONTAINER_CREDENTIALS_FULL_URI": url + PodIdentityPath,
		"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": writeToken(t, "pods.eks.amazonaws.com", time.Now().Add(time.Hour))})
	if _, err := api.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{}); err != nil {
		t.Fatal(err)
	}
	if n := sim.Counters()["PodIdentity:GetCredentials"]; n != 1 {
		t.Errorf("%d Pod Identity calls, want 1", n)
	}
	api = defaultChainEC2(t, url, map[string]string{"AWS_CONTAINER_CREDENTIALS_FULL_URI": url + PodIdentityPath,
		"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": writeToken(t, "sts.amazonaws.com", time.Now().Add(time.Hour))})
	if _, err := api.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{}); err == nil ||
		!strings.Contains(err.Error(), "incorrect token audience") {
		t.Errorf("a token for STS at the agent: %v, want the audience named", err)
	}
}

func TestSDKAssumeRoleAgainstTheEmulator(t *testing.T) {
	sim, url := startSim(t, Config{})
	client := sts.New(sts.Options{Region: "us-west-2", BaseEndpoint: aws.String(url + "/sts"),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDSOURCE", "s", "")})
	p := stscreds.NewAssumeRoleProvider(client, "arn:aws:iam::123456789012:role/vpc-cni")
	creds, err := p.Retrieve(context.Background())
	if err != nil || !strings.HasPrefix(creds.AccessKeyID, "ASIA") || !creds.CanExpire || creds.AccountID != "123456789012" {
		t.Fatalf("AssumeRole: %+v, %v", creds, err)
	}
	if n := sim.Counters()["STS:AssumeRole"]; n != 1 {
		t.Errorf("%d AssumeRole calls, want 1", n)
	}
	bad := stscreds.NewAssumeRoleProvider(client, "not-an-arn")
	if _, err := bad.Retrieve(context.Background()); apiCode(err) != "ValidationError" {
		t.Errorf("a bad role ARN: %v, want ValidationError", err)
	}
}
