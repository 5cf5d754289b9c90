package cloud

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// chooseCredentials walks the credential chain as far as it goes without
// I/O: keys in the environment; the profile's keys (credentials file, then
// config file); else the instance role. A source that is set up but needs
// STS, SSO or a process (web identity, role_arn, sso_*, credential_process,
// container credentials) is an error, not skipped: falling through to the
// instance role would act as a different identity than the one configured.
func chooseCredentials(env awsEnv, p profile) credSource {
	id := env.first("AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY")
	secret := env.first("AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY")
	if id != "" && secret != "" {
		return credSource{Static: &aws.Credentials{AccessKeyID: id, SecretAccessKey: secret,
			SessionToken: env("AWS_SESSION_TOKEN"), Source: "EnvConfigCredentials"}}
	}
	if env("AWS_WEB_IDENTITY_TOKEN_FILE") != "" {
		return credSource{Err: fmt.Errorf("AWS_WEB_IDENTITY_TOKEN_FILE is set: web identity credentials need STS, "+
			"which %s", unsupportedHint)}
	}
	if src, ok := profileCredentials(p); ok {
		return src
	}
	if v := env.first("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"); v != "" {
		return credSource{Err: fmt.Errorf("AWS_CONTAINER_CREDENTIALS_*_URI is set: container credentials, which %s",
			unsupportedHint)}
	}
	return credSource{}
}

const unsupportedHint = "vpc-cni does not support; use static keys, AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, " +
	"or the instance role"

// unsupportedProfileKeys are the profile keys of sources we do not build,
// in the SDK's order of precedence after static keys.
var unsupportedProfileKeys = [...]struct{ key, what string }{
	{"credential_source", "a role assumed through STS"},
	{"web_identity_token_file", "web identity credentials through STS"},
	{"sso_session", "IAM Identity Center (SSO)"},
	{"sso_start_url", "IAM Identity Center (SSO)"},
	{"sso_account_id", "IAM Identity Center (SSO)"},
	{"sso_role_name", "IAM Identity Center (SSO)"},
	{"sso_region", "IAM Identity Center (SSO)"},
	{"login_session", "console sign-in credentials"},
	{"credential_process", "an external credential process"},
}

// profileCredentials says what the profile gives, and false when it gives
// nothing (the chain goes on).
func profileCredentials(p profile) (credSource, bool) {
	if p.named && p.config == nil && p.creds == nil {
		return credSource{Err: fmt.Errorf("profile %q (%s) is in neither %s nor %s", p.name, p.namedBy,
			p.configFile, p.credsFile)}, true
	}
	for _, key := range []string{"role_arn", "source_profile"} { // the SDK assumes the role even over keys
		if file, ok := p.lookup(key); ok {
			return p.unsupported(file, key, "a role assumed through STS"), true
		}
	}
	for _, f := range []struct {
		path string
		kv   map[string]string
	}{{p.credsFile, p.creds}, {p.configFile, p.config}} {
		if src, ok := staticKeys(p.name, f.path, f.kv); ok {
			return src, true
		}
	}
	for _, u := range unsupportedProfileKeys {
		if file, ok := p.lookup(u.key); ok {
			return p.unsupported(file, u.key, u.what), true
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
		return credSource{Err: fmt.Errorf("profile %q in %s has aws_access_key_id but no aws_secret_access_key",
			name, path)}, true
	case secret != "":
		return credSource{Err: fmt.Errorf("profile %q in %s has aws_secret_access_key but no aws_access_key_id",
			name, path)}, true
	}
	return credSource{}, false
}

// lookup finds a non-empty key, credentials file first, and says which file.
func (p profile) lookup(key string) (string, bool) {
	if p.creds[key] != "" {
		return p.credsFile, true
	}
	if p.config[key] != "" {
		return p.configFile, true
	}
	return "", false
}

func (p profile) unsupported(file, key, what string) credSource {
	return credSource{Err: fmt.Errorf("profile %q in %s uses %s (%s), which %s", p.name, file, key, what,
		unsupportedHint)}
}

// provider turns the chosen source into a cached SDK provider; role is the
// instance-role provider, used when nothing else is set up.
func (s credSource) provider(role aws.CredentialsProvider) aws.CredentialsProvider {
	switch {
	case s.Err != nil:
		err := s.Err
		return aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{}, err
		})
	case s.Static != nil:
		creds := *s.Static
		return aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return creds, nil })
	}
	return role
}
