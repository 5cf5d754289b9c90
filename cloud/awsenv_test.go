package cloud

import (
	"encoding/pem"
	"io"
	"log"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"vpc-cni/internal/testsupport/simtest"

	"github.com/aws/aws-sdk-go-v2/aws"

	"vpc-cni/sim/ec2sim"
)

// writeTemp writes content to a new file and returns its path.
func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// withoutEnvKeys leaves the chain to the shared files and the instance role.
func withoutEnvKeys(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
}

// signedWith makes one EC2 call and returns the access key that signed it.
func signedWith(t *testing.T, sim *ec2sim.Sim) string {
	t.Helper()
	c := newClient(t, Options{})
	if _, err := c.Subnet(testCtx(t), sim.State().SubnetID); err != nil {
		t.Fatal(err)
	}
	return sim.LastAccessKey()
}

const testCredentialsFile = `[default]
aws_access_key_id = AKIDDEFAULT
aws_secret_access_key = default-secret

[prod] # comment
aws_access_key_id=AKIDPROD
aws_secret_access_key="prod-secret"
aws_session_token = prod-token
`

func TestSharedCredentialsFileProfiles(t *testing.T) {
	sim := startSim(t, ec2sim.Config{})
	withoutEnvKeys(t)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", writeTemp(t, "credentials", testCredentialsFile))
	if got := signedWith(t, sim); got != "AKIDDEFAULT" {
		t.Errorf("no AWS_PROFILE: signed with %q, want AKIDDEFAULT", got)
	}
	t.Setenv("AWS_DEFAULT_PROFILE", "prod")
	if got := signedWith(t, sim); got != "AKIDPROD" {
		t.Errorf("AWS_DEFAULT_PROFILE=prod: signed with %q, want AKIDPROD", got)
	}
	t.Setenv("AWS_PROFILE", "default") // beats AWS_DEFAULT_PROFILE
	if got := signedWith(t, sim); got != "AKIDDEFAULT" {
		t.Errorf("AWS_PROFILE=default: signed with %q, want AKIDDEFAULT", got)
	}
}

func TestEnvKeysBeatFiles(t *testing.T) {
	sim := startSim(t, ec2sim.Config{})
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", writeTemp(t, "credentials", testCredentialsFile))
	t.Setenv("AWS_PROFILE", "prod")
	if got := signedWith(t, sim); got != "AKIDEC2SIM" {
		t.Errorf("signed with %q, want the environment's AKIDEC2SIM", got)
	}
	withoutEnvKeys(t)
	t.Setenv("AWS_ACCESS_KEY", "AKIDALIAS")
	t.Setenv("AWS_SECRET_KEY", "alias-secret")
	if got := signedWith(t, sim); got != "AKIDALIAS" {
		t.Errorf("AWS_ACCESS_KEY/AWS_SECRET_KEY: signed with %q, want AKIDALIAS", got)
	}
}

// TestConfigFileRegionAndKeys: the config file's profile gives the region
// and, after the credentials file, static keys.
func TestConfigFileRegionAndKeys(t *testing.T) {
	sim := startSim(t, ec2sim.Config{Region: "us-east-1"})
	withoutEnvKeys(t)
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_PROFILE", "prod")
	t.Setenv("AWS_CONFIG_FILE", writeTemp(t, "config", `[default]
region = ap-south-1
[profile prod]
region = eu-central-1
aws_access_key_id = AKIDCONFIG
aws_secret_access_key = config-secret
`))
	c := newClient(t, Options{})
	if _, err := c.Subnet(testCtx(t), sim.State().SubnetID); err != nil {
		t.Fatal(err)
	}
	if got := c.ec2.client().Options().Region; got != "eu-central-1" {
		t.Errorf("region %q, want eu-central-1 from [profile prod]", got)
	}
	if got := sim.LastAccessKey(); got != "AKIDCONFIG" {
		t.Errorf("signed with %q, want the config file's AKIDCONFIG", got)
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", writeTemp(t, "credentials", testCredentialsFile))
	if got := signedWith(t, sim); got != "AKIDPROD" {
		t.Errorf("signed with %q, want the credentials file's AKIDPROD over the config file's", got)
	}
	t.Setenv("AWS_DEFAULT_REGION", "sa-east-1")
	c = newClient(t, Options{})
	if _, err := c.Subnet(testCtx(t), sim.State().SubnetID); err != nil || c.ec2.client().Options().Region != "sa-east-1" {
		t.Errorf("AWS_DEFAULT_REGION: err %v, region %q, want sa-east-1", err, c.ec2.client().Options().Region)
	}
}

func TestUnsupportedProfile(t *testing.T) {
	sim := startSim(t, ec2sim.Config{})
	cfg := writeTemp(t, "config", `[profile sso]
sso_session = corp
sso_account_id = 123456789012
[profile assume]
role_arn = arn:aws:iam::123456789012:role/admin
`)
	t.Setenv("AWS_CONFIG_FILE", cfg)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", writeTemp(t, "credentials", "[assume]\naws_access_key_id = AKIDSRC\n"+
		"aws_secret_access_key = src-secret\n[half]\naws_access_key_id = AKIDHALF\n"))
	t.Setenv("AWS_PROFILE", "sso")
	if got := signedWith(t, sim); got != "AKIDEC2SIM" {
		t.Fatalf("with keys in the environment the profile is not used; signed with %q", got)
	}
	withoutEnvKeys(t)
	for awsProfileName, parts := range map[string][]string{
		"sso":     {`profile "sso" in ` + cfg, "sso_session", "does not support"},
		"assume":  {`profile "assume" in ` + cfg, "role_arn but no source_profile"}, // not the keys beside it
		"half":    {`profile "half"`, "no aws_secret_access_key"},
		"missing": {`profile "missing" (AWS_PROFILE) is in neither ` + cfg},
	} {
		t.Setenv("AWS_PROFILE", awsProfileName)
		c := newClient(t, Options{})
		sim.ResetCounters()
		_, err := c.Subnet(testCtx(t), sim.State().SubnetID)
		wantKind(t, err, KindNoCredentials, append(parts, "ec2:DescribeSubnets", credentialsHint)...)
		if n := sim.Counters()["DescribeSubnets"]; n != 0 {
			t.Errorf("profile %s: an unsigned call reached EC2 %d times", awsProfileName, n)
		}
		if _, err := c.Identity(testCtx(t)); err != nil {
			t.Errorf("profile %s: IMDS needs no credentials, got %v", awsProfileName, err)
		}
	}
}

func TestEnvSourcesWithoutTheirParts(t *testing.T) {
	sim := startSim(t, ec2sim.Config{})
	withoutEnvKeys(t)
	t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:1/creds")
	c := newClient(t, Options{})
	_, err := c.Subnet(testCtx(t), sim.State().SubnetID)
	wantKind(t, err, KindNoCredentials, "container credentials (AWS_CONTAINER_CREDENTIALS_FULL_URI", "connection refused")
	t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", "/var/run/token")
	c = newClient(t, Options{})
	_, err = c.Subnet(testCtx(t), sim.State().SubnetID)
	wantKind(t, err, KindNoCredentials, "AWS_WEB_IDENTITY_TOKEN_FILE is set but AWS_ROLE_ARN is not")
}

func TestEndpointPrecedence(t *testing.T) {
	sim := startSim(t, ec2sim.Config{})
	dead := simtest.ClosedURL(t)
	t.Setenv("AWS_ENDPOINT_URL", dead)
	if _, err := newClient(t, Options{}).Subnet(testCtx(t), sim.State().SubnetID); err != nil {
		t.Fatalf("AWS_ENDPOINT_URL_EC2 beats AWS_ENDPOINT_URL: %v", err)
	}
	t.Setenv("AWS_ENDPOINT_URL", sim.URL())
	t.Setenv("AWS_ENDPOINT_URL_EC2", "")
	if _, err := newClient(t, Options{}).Subnet(testCtx(t), sim.State().SubnetID); err != nil {
		t.Fatalf("AWS_ENDPOINT_URL alone: %v", err)
	}
	t.Setenv("AWS_ENDPOINT_URL_EC2", dead)
	_, err := newClient(t, Options{}).Subnet(testCtx(t), sim.State().SubnetID)
	wantKind(t, err, KindUnreachable, "EC2 endpoint "+dead)

	t.Setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true")
	c := newClient(t, Options{Region: "eu-west-3"})
	if _, err := c.api(testCtx(t)); err != nil { // builds the client; no call leaves the host
		t.Fatal(err)
	}
	if u, _ := c.endpoints(); u != "https://ec2.eu-west-3.amazonaws.com" || c.ec2.client().Options().BaseEndpoint != nil {
		t.Errorf("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true: endpoint %s, BaseEndpoint %v", u, c.ec2.client().Options().BaseEndpoint)
	}
	t.Setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "yes")
	_, err = newClient(t, Options{}).Subnet(testCtx(t), sim.State().SubnetID)
	wantKind(t, err, KindOther, "config", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")
}

func TestRetrySettingsFromEnv(t *testing.T) {
	sim := startSim(t, ec2sim.Config{})
	t.Setenv("AWS_RETRY_MODE", "adaptive")
	c := newClient(t, Options{})
	if _, err := c.Subnet(testCtx(t), sim.State().SubnetID); err != nil {
		t.Fatal(err)
	}
	if got := c.ec2.client().Options().RetryMode; got != aws.RetryModeAdaptive {
		t.Errorf("RetryMode %q, want adaptive", got)
	}
	for k, v := range map[string]string{"AWS_RETRY_MODE": "eager", "AWS_MAX_ATTEMPTS": "three"} {
		t.Run(k, func(t *testing.T) {
			t.Setenv(k, v)
			_, err := newClient(t, Options{}).Subnet(testCtx(t), sim.State().SubnetID)
			wantKind(t, err, KindOther, "loading the AWS configuration", k)
		})
	}
}

// TestCABundle: AWS_CA_BUNDLE's certificates are the roots that EC2's TLS
// certificate is checked against; a bad bundle is a clear configuration error.
func TestCABundle(t *testing.T) {
	sim := startSim(t, ec2sim.Config{})
	target, err := url.Parse(sim.URL())
	if err != nil {
		t.Fatal(err)
	}
	tlsEC2 := httptest.NewUnstartedServer(httputil.NewSingleHostReverseProxy(target))
	tlsEC2.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	tlsEC2.StartTLS()
	t.Cleanup(tlsEC2.Close)
	t.Setenv("AWS_ENDPOINT_URL_EC2", tlsEC2.URL)
	_, err = newClient(t, Options{MaxAttempts: 1}).Subnet(testCtx(t), sim.State().SubnetID)
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("without the bundle the test server's certificate must be refused, got %v", err)
	}
	bundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsEC2.Certificate().Raw})
	t.Setenv("AWS_CA_BUNDLE", writeTemp(t, "ca.pem", string(bundle)))
	if _, err := newClient(t, Options{}).Subnet(testCtx(t), sim.State().SubnetID); err != nil {
		t.Fatalf("with the bundle: %v", err)
	}

	missing := filepath.Join(t.TempDir(), "nope.pem")
	t.Setenv("AWS_CA_BUNDLE", missing)
	_, err = newClient(t, Options{}).Subnet(testCtx(t), sim.State().SubnetID)
	wantKind(t, err, KindOther, "config: loading the AWS configuration: AWS_CA_BUNDLE", missing, "no such file")
	notPEM := writeTemp(t, "ca.pem", "not a certificate")
	t.Setenv("AWS_CA_BUNDLE", notPEM)
	_, err = newClient(t, Options{}).Identity(testCtx(t))
	wantKind(t, err, KindOther, "AWS_CA_BUNDLE: no PEM certificate in "+notPEM)
}

// TestLoadAWSSettingsFiles: sections the SDK ignores are ignored here too.
func TestLoadAWSSettingsFiles(t *testing.T) {
	files := map[string]string{
		"/c": "[prod]\nregion = wrong\n[profile prod]\nregion = right\n[default]\nregion = d1\n[profile default]\nregion = d2\n",
		"/k": "[profile prod]\naws_access_key_id = WRONG\naws_secret_access_key = s\n",
	}
	read := func(p string) ([]byte, error) {
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return os.ReadFile(p)
	}
	for awsProfileName, region := range map[string]string{"prod": "right", "default": "d2"} {
		env := map[string]string{"AWS_CONFIG_FILE": "/c", "AWS_SHARED_CREDENTIALS_FILE": "/k", "AWS_PROFILE": awsProfileName}
		s, err := loadAWSSettings(func(k string) string { return env[k] }, read)
		if err != nil {
			t.Fatal(err)
		}
		if s.Region != region || s.Creds != (credSource{}) {
			t.Errorf("profile %s: region %q creds %+v, want %q and the instance role", awsProfileName, s.Region, s.Creds, region)
		}
	}
	env := map[string]string{"AWS_CONFIG_FILE": t.TempDir()} // a directory: opens, cannot be read
	if _, err := loadAWSSettings(func(k string) string { return env[k] }, read); err == nil {
		t.Error("an unreadable config file must be an error")
	}
}
