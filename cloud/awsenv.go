package cloud

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
)

// awsSettings is what the environment and the shared files say, before any
// SDK object is built (see the package doc for the contract).
type awsSettings struct {
	Region      string        // "" : ask IMDS
	Endpoint    string        // EC2 base endpoint; "" : the region's
	MaxAttempts int           // 0: the SDK's (3)
	RetryMode   aws.RetryMode // "": standard
	CABundle    string        // PEM file replacing the system roots; "" : none
	IMDS        imdsSettings
	Creds       credSource
	STSEndpoint string // AWS_ENDPOINT_URL_STS or AWS_ENDPOINT_URL; "" : the region's
}

// awsEnv reads the environment; production passes os.Getenv.
type awsEnv func(string) string

// first returns the first non-empty variable of names (empty counts as unset).
func (env awsEnv) first(names ...string) string {
	for _, n := range names {
		if v := env(n); v != "" {
			return v
		}
	}
	return ""
}

// loadAWSSettings resolves the environment contract. readFile reads a shared
// file (os.ReadFile); one that cannot be opened counts as empty.
func loadAWSSettings(env awsEnv, readFile func(string) ([]byte, error)) (awsSettings, error) {
	var s awsSettings
	prof, err := loadAWSProfile(env, readFile)
	if err != nil {
		return s, err
	}
	s.Region = env.first("AWS_REGION", "AWS_DEFAULT_REGION")
	if s.Region == "" {
		s.Region = prof.config["region"]
	}
	if s.Endpoint, err = serviceEndpoint(env, "EC2"); err != nil {
		return s, err
	}
	s.STSEndpoint, _ = serviceEndpoint(env, "STS") // the same variable's error was returned above
	if s.MaxAttempts, s.RetryMode, err = retrySettings(env); err != nil {
		return s, err
	}
	s.CABundle = env("AWS_CA_BUNDLE")
	if s.IMDS, err = loadIMDSSettings(env); err != nil {
		return s, err
	}
	s.Creds = chooseCredentials(env, prof)
	return s, nil
}

// serviceEndpoint: AWS_ENDPOINT_URL_<SERVICE>, else AWS_ENDPOINT_URL, unless
// AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is true.
func serviceEndpoint(env awsEnv, service string) (string, error) {
	ignore, err := envBool(env, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")
	if err != nil || ignore {
		return "", err
	}
	return env.first("AWS_ENDPOINT_URL_"+service, "AWS_ENDPOINT_URL"), nil
}

// imdsSettings: AWS_EC2_METADATA_SERVICE_ENDPOINT(_MODE) and
// AWS_EC2_METADATA_V1_DISABLED. (imds.New itself reads the endpoint and
// AWS_EC2_METADATA_DISABLED; we read the endpoint too, for messages.)
type imdsSettings struct {
	Endpoint   string
	Mode       imds.EndpointModeState
	V1Disabled bool
}

func loadIMDSSettings(env awsEnv) (imdsSettings, error) {
	s := imdsSettings{Endpoint: env("AWS_EC2_METADATA_SERVICE_ENDPOINT")}
	if v := env("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE"); v != "" {
		if err := s.Mode.SetFromString(v); err != nil {
			return s, fmt.Errorf("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE=%q: want IPv4 or IPv6", v)
		}
	}
	var err error
	s.V1Disabled, err = envBool(env, "AWS_EC2_METADATA_V1_DISABLED")
	return s, err
}

func (s imdsSettings) options(o *imds.Options) {
	o.Endpoint, o.EndpointMode = s.Endpoint, s.Mode
	if s.V1Disabled {
		o.EnableFallback = aws.FalseTernary
	}
}

// url is where IMDS calls go, for messages.
func (s imdsSettings) url() string {
	switch {
	case s.Endpoint != "":
		return strings.TrimRight(s.Endpoint, "/")
	case s.Mode == imds.EndpointModeStateIPv6:
		return "http://[fd00:ec2::254]"
	}
	return imdsDefaultURL
}

func retrySettings(env awsEnv) (int, aws.RetryMode, error) {
	attempts := 0
	if v := env("AWS_MAX_ATTEMPTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, "", fmt.Errorf("AWS_MAX_ATTEMPTS=%q: want a whole number of at least 1", v)
		}
		attempts = n
	}
	var mode aws.RetryMode
	if v := env("AWS_RETRY_MODE"); v != "" {
		m, err := aws.ParseRetryMode(v)
		if err != nil {
			return 0, "", fmt.Errorf("AWS_RETRY_MODE=%q: want standard or adaptive", v)
		}
		mode = m
	}
	return attempts, mode, nil
}

func envBool(env awsEnv, name string) (bool, error) {
	switch v := env(name); {
	case v == "":
		return false, nil
	case strings.EqualFold(v, "true"):
		return true, nil
	case strings.EqualFold(v, "false"):
		return false, nil
	default:
		return false, fmt.Errorf("%s=%q: want true or false", name, v)
	}
}

// awsProfile is one named AWS shared-config profile as the two shared files give it.
type awsProfile struct {
	name, configFile, credsFile string
	namedBy                     string // "AWS_PROFILE" or "AWS_DEFAULT_PROFILE"; "" for default
	named                       bool
	config, creds               map[string]string
	allConfig, allCreds         iniSections // for source_profile
}

// sibling is another AWS profile of the same files.
func (p awsProfile) sibling(name string) awsProfile {
	q := awsProfile{name: name, configFile: p.configFile, credsFile: p.credsFile, named: true,
		allConfig: p.allConfig, allCreds: p.allCreds, config: configSection(p.allConfig, name)}
	if !strings.HasPrefix(name, "profile ") {
		q.creds = p.allCreds[name]
	}
	return q
}

func loadAWSProfile(env awsEnv, readFile func(string) ([]byte, error)) (awsProfile, error) {
	p := awsProfile{name: "default"}
	for _, v := range []string{"AWS_PROFILE", "AWS_DEFAULT_PROFILE"} {
		if name := env(v); name != "" {
			p.name, p.namedBy, p.named = name, v, true
			break
		}
	}
	p.configFile = sharedFile(env, "AWS_CONFIG_FILE", "config")
	p.credsFile = sharedFile(env, "AWS_SHARED_CREDENTIALS_FILE", "credentials")
	cfg, err := readINI(readFile, p.configFile)
	if err != nil {
		return p, err
	}
	creds, err := readINI(readFile, p.credsFile)
	if err != nil {
		return p, err
	}
	p.allConfig, p.allCreds = cfg, creds
	p.config = configSection(cfg, p.name)
	if !strings.HasPrefix(p.name, "profile ") { // the SDK drops such sections from the credentials file
		p.creds = creds[p.name]
	}
	return p, nil
}

// configSection: "[profile NAME]"; for default also "[default]", which
// "[profile default]" replaces, as in the SDK.
func configSection(cfg iniSections, name string) map[string]string {
	if s, ok := cfg["profile "+name]; ok {
		return s
	}
	if name == "default" {
		return cfg["default"]
	}
	return nil
}

// sharedFile is the variable's path, else ~/.aws/base.
func sharedFile(env awsEnv, variable, base string) string {
	if v := env(variable); v != "" {
		return v
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		if u, uerr := user.Current(); uerr == nil {
			home = u.HomeDir
		}
	}
	if home == "" {
		return "" // no home: no default files (the SDK would look in the working directory)
	}
	return filepath.Join(home, ".aws", base)
}

func readINI(readFile func(string) ([]byte, error), path string) (iniSections, error) {
	if path == "" {
		return nil, nil
	}
	b, err := readFile(path)
	var perr *fs.PathError
	if errors.As(err, &perr) && perr.Op == "open" {
		return nil, nil // like the SDK: a file that cannot be opened counts as empty
	}
	if err != nil {
		return nil, fmt.Errorf("reading the AWS shared file: %w", err)
	}
	return parseINI(string(b)), nil
}
