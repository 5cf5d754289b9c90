package cloud

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// credSource is the first source of the credential chain that is set up,
// as the SDK's default chain orders them. None set: the instance role
// through IMDS.
type credSource struct {
	Static      *aws.Credentials
	WebIdentity *webIdentity    // STS AssumeRoleWithWebIdentity (IRSA)
	Container   *containerCreds // an HTTP endpoint (EKS Pod Identity, ECS)
	AssumeRole  *assumeRole     // STS AssumeRole over another source
	Err         error           // a set-up source we cannot use; EC2 calls fail with it
}

// instanceRole says nothing else is set up.
func (s credSource) instanceRole() bool {
	return s.Static == nil && s.WebIdentity == nil && s.Container == nil && s.AssumeRole == nil && s.Err == nil
}

type webIdentity struct {
	RoleARN, SessionName string
	Token                tokenSource
	Origin               string // for messages: which variables or AWS profile set it up
}

type containerCreds struct {
	URI    string
	Token  tokenSource // may be empty: no Authorization header
	Origin string
}

type assumeRole struct {
	RoleARN, SessionName, ExternalID string
	Source                           *credSource // the credentials that call AssumeRole
	Origin                           string
}

// chooseCredentials walks the SDK's default chain as far as it goes without
// I/O: keys in the environment; web identity in the environment; the
// AWS profile (role_arn over anything, then its keys); container credentials;
// else the instance role. A source that is set up but that we do not build
// (SSO, credential_process, sign-in) is an error, not skipped: falling
// through to the instance role would act as a different identity than the
// one configured.
func chooseCredentials(env awsEnv, p awsProfile) credSource {
	id := env.first("AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY")
	secret := env.first("AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY")
	if id != "" && secret != "" {
		return credSource{Static: &aws.Credentials{AccessKeyID: id, SecretAccessKey: secret,
			SessionToken: env("AWS_SESSION_TOKEN"), Source: "EnvConfigCredentials"}}
	}
	if file := env("AWS_WEB_IDENTITY_TOKEN_FILE"); file != "" {
		if env("AWS_ROLE_ARN") == "" {
			return credSource{Err: fmt.Errorf("AWS_WEB_IDENTITY_TOKEN_FILE is set but AWS_ROLE_ARN is not: " +
				"web identity needs the role to assume")}
		}
		return credSource{WebIdentity: &webIdentity{RoleARN: env("AWS_ROLE_ARN"), SessionName: env("AWS_ROLE_SESSION_NAME"),
			Token: tokenSource{File: file, Var: "AWS_WEB_IDENTITY_TOKEN_FILE"}, Origin: "AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN"}}
	}
	if src, ok := awsProfileCredentials(env, p); ok {
		return src
	}
	return containerSource(env)
}

// containerSource: AWS_CONTAINER_CREDENTIALS_FULL_URI, else _RELATIVE_URI
// (ECS), with the token from AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE (read on
// every call) or AWS_CONTAINER_AUTHORIZATION_TOKEN. Neither: the zero source.
func containerSource(env awsEnv) credSource {
	tok := tokenSource{File: env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"), Var: "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"}
	if tok.File == "" {
		tok = tokenSource{Inline: env("AWS_CONTAINER_AUTHORIZATION_TOKEN"), Var: "AWS_CONTAINER_AUTHORIZATION_TOKEN"}
	}
	if rel := env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"); rel != "" {
		return credSource{Container: &containerCreds{URI: "http://169.254.170.2" + rel, Token: tok,
			Origin: "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"}}
	}
	full := env("AWS_CONTAINER_CREDENTIALS_FULL_URI")
	if full == "" {
		return credSource{}
	}
	if err := allowedContainerURI(full); err != nil {
		return credSource{Err: fmt.Errorf("AWS_CONTAINER_CREDENTIALS_FULL_URI=%q: %w", full, err)}
	}
	return credSource{Container: &containerCreds{URI: full, Token: tok, Origin: "AWS_CONTAINER_CREDENTIALS_FULL_URI"}}
}

// allowedContainerURI applies the SDK's rule: https anywhere; http only to
// loopback, the ECS address 169.254.170.2 or the EKS Pod Identity agent
// (169.254.170.23, fd00:ec2::23).
func allowedContainerURI(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
	default:
		return fmt.Errorf("scheme %q: want http or https", u.Scheme)
	}
	host := u.Hostname()
	if isLoopbackHost(host) {
		return nil
	}
	ip := net.ParseIP(host)
	if ip != nil && (ip.Equal(net.ParseIP("169.254.170.2")) ||
		ip.Equal(net.ParseIP("169.254.170.23")) || ip.Equal(net.ParseIP("fd00:ec2::23"))) {
		return nil
	}
	return fmt.Errorf("http only to loopback, 169.254.170.2, 169.254.170.23 or fd00:ec2::23, not %q", host)
}

// isLoopbackHost: localhost or a loopback address, without a DNS lookup.
func isLoopbackHost(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// unsupportedAWSProfileKeys are the AWS profile keys of sources we do not build,
// in the SDK's order of precedence after static keys.
var unsupportedAWSProfileKeys = [...]struct{ key, what string }{
	{"sso_session", "IAM Identity Center (SSO)"},
	{"sso_start_url", "IAM Identity Center (SSO)"},
	{"sso_account_id", "IAM Identity Center (SSO)"},
	{"sso_role_name", "IAM Identity Center (SSO)"},
	{"sso_region", "IAM Identity Center (SSO)"},
	{"login_session", "console sign-in credentials"},
	{"credential_process", "an external credential process"},
}

const unsupportedHint = "vpc-cni does not support; use keys, a role (role_arn with source_profile, " +
	"credential_source or web_identity_token_file), web identity, container credentials or the instance role"

// awsProfileCredentials says what the AWS profile gives, and false when it gives
// nothing (the chain goes on).
func awsProfileCredentials(env awsEnv, p awsProfile) (credSource, bool) {
	if p.named && p.config == nil && p.creds == nil {
		return credSource{Err: fmt.Errorf("AWS profile %q (%s) is in neither %s nor %s", p.name, p.namedBy,
			p.configFile, p.credsFile)}, true
	}
	if _, ok := p.lookup("role_arn"); ok { // the SDK assumes the role even over keys
		return awsProfileRole(env, p, 0), true
	}
	if src, ok := awsProfileKeys(p); ok {
		return src, true
	}
	for _, key := range []string{"source_profile", "credential_source", "web_identity_token_file"} {
		if file, ok := p.lookup(key); ok {
			return credSource{Err: fmt.Errorf("AWS profile %q in %s has %s but no role_arn", p.name, file, key)}, true
		}
	}
	for _, u := range unsupportedAWSProfileKeys {
		if file, ok := p.lookup(u.key); ok {
			return p.unsupported(file, u.key, u.what), true
		}
	}
	return credSource{}, false
}

// awsProfileKeys: the AWS profile's static keys, credentials file first.
func awsProfileKeys(p awsProfile) (credSource, bool) {
	for _, f := range []struct {
		path string
		kv   map[string]string
	}{{p.credsFile, p.creds}, {p.configFile, p.config}} {
		if src, ok := staticKeys(p.name, f.path, f.kv); ok {
			return src, true
		}
	}
	return credSource{}, false
}

// staticKeys: both keys, or an error naming the missing one, or nothing.
func staticKeys(name, path string, kv map[string]string) (credSource, bool) {
	id, secret := kv["aws_access_key_id"], kv["aws_secret_access_key"]
	switch {
	case id != "" && secret != "":
		return credSource{Static: &aws.Credentials{AccessKeyID: id, SecretAccessKey: secret,
			SessionToken: kv["aws_session_token"], Source: "SharedConfigCredentials: " + path}}, true
	case id != "":
		return credSource{Err: fmt.Errorf("AWS profile %q in %s has aws_access_key_id but no aws_secret_access_key",
			name, path)}, true
	case secret != "":
		return credSource{Err: fmt.Errorf("AWS profile %q in %s has aws_secret_access_key but no aws_access_key_id",
			name, path)}, true
	}
	return credSource{}, false
}

// lookup finds a non-empty key, credentials file first, and says which file.
func (p awsProfile) lookup(key string) (string, bool) {
	if p.creds[key] != "" {
		return p.credsFile, true
	}
	if p.config[key] != "" {
		return p.configFile, true
	}
	return "", false
}

func (p awsProfile) get(key string) string {
	if v := p.creds[key]; v != "" {
		return v
	}
	return p.config[key]
}

func (p awsProfile) unsupported(file, key, what string) credSource {
	return credSource{Err: fmt.Errorf("AWS profile %q in %s uses %s (%s), which %s", p.name, file, key, what,
		unsupportedHint)}
}

// staticProvider hands out fixed credentials.
func staticProvider(creds aws.Credentials) aws.CredentialsProvider {
	return aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return creds, nil })
}

// failingProvider fails every call with err, so the configuration error
// surfaces on the first EC2 call, classified as missing credentials.
func failingProvider(err error) aws.CredentialsProvider {
	return aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{}, err
	})
}

func (s credSource) describe() string {
	switch {
	case s.WebIdentity != nil:
		return "web identity (" + s.WebIdentity.Origin + ", role " + s.WebIdentity.RoleARN + ")"
	case s.Container != nil:
		return "container credentials (" + s.Container.Origin + ", " + s.Container.URI + ")"
	case s.AssumeRole != nil:
		return "role " + s.AssumeRole.RoleARN + " (" + s.AssumeRole.Origin + ")"
	case s.Static != nil:
		return "keys (" + strings.TrimPrefix(s.Static.Source, "SharedConfigCredentials: ") + ")"
	}
	return "the instance role (IMDS)"
}
