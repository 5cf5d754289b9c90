// Package cloud talks to EC2 and the instance metadata service (IMDS)
// through aws-sdk-go-v2 and turns their failures into the few kinds the
// policy and reconcile act on (see Kind).
//
// Nothing is done at package initialisation and New does no I/O: the
// configuration is read, and the clients built, on the first call that needs
// them (the CNI plugin is a fresh process per pod). The configuration is
// built here rather than by aws-sdk-go-v2/config, whose STS, SSO and sign-in
// dependencies would cost every process their initialisation. It honours:
//
//   - Region: Options.Region, AWS_REGION, AWS_DEFAULT_REGION, the AWS profile's
//     region in the shared config file, else IMDS placement/region.
//   - AWS profile: AWS_PROFILE, else AWS_DEFAULT_PROFILE, else default; read from
//     AWS_CONFIG_FILE (~/.aws/config, "[profile NAME]" or "[default]") and
//     AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials, "[NAME]").
//   - Credentials, first that is set up, in the order of the SDK's default
//     chain: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_ACCESS_KEY,
//     AWS_SECRET_KEY) with AWS_SESSION_TOKEN; web identity
//     (AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN, AWS_ROLE_SESSION_NAME:
//     IRSA); the AWS profile: role_arn over web_identity_token_file,
//     source_profile or credential_source (STS), else its keys (credentials
//     file, then config file); container credentials
//     (AWS_CONTAINER_CREDENTIALS_FULL_URI or _RELATIVE_URI with
//     AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE or _TOKEN: EKS Pod Identity);
//     the handoff file (Options.Handoff); the instance role through IMDS.
//     Every source is fetched on the first EC2 call, never for IMDS alone.
//   - STS endpoint: AWS_ENDPOINT_URL_STS, else AWS_ENDPOINT_URL; else the
//     region's (regional, not global).
//   - EC2 endpoint: AWS_ENDPOINT_URL_EC2, else AWS_ENDPOINT_URL, unless
//     AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true.
//   - IMDS: AWS_EC2_METADATA_SERVICE_ENDPOINT, _ENDPOINT_MODE,
//     AWS_EC2_METADATA_DISABLED, AWS_EC2_METADATA_V1_DISABLED.
//   - AWS_MAX_ATTEMPTS, AWS_RETRY_MODE (standard or adaptive), AWS_CA_BUNDLE.
//
// Not supported, and an error on EC2 calls rather than a silent fall-through
// to the instance role (unless keys are in the environment): AWS profiles with
// sso_*, login_session or credential_process; an AWS profile named by
// AWS_PROFILE that neither file has. Other shared-config settings (endpoint_url, max_attempts,
// retry_mode, ca_bundle, ec2_metadata_* in an AWS profile, FIPS and dual-stack
// endpoints) are ignored: use the environment variables.
package cloud

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials/ec2rolecreds"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// Options configure a Client. The zero value is usable.
type Options struct {
	Region      string        // overrides AWS_REGION and shared config; empty: those, else IMDS placement/region
	HTTPTimeout time.Duration // per HTTP request; default 10s (AttemptTimeout derives it from a deadline)
	ClusterName string        // CLUSTER_NAME: tags new ENIs, narrows the leaked-ENI sweep
	UserAgent   string        // appended to the SDK's User-Agent, e.g. "vpc-cni/1.2.3"

	// Budget is the node's shared EC2 rate budget; nil means no client-side limit.
	Budget                         RateBudget
	DescribeBudget, MutatingBudget BucketRate // zero: 2/s burst 20 each

	MaxAttempts int           // SDK attempts per call; 0: AWS_MAX_ATTEMPTS, else 3
	MaxBackoff  time.Duration // cap on the SDK's retry backoff (EC2 and IMDS); 0: SDK defaults (tests set ms)
	PageSize    int32         // MaxResults of paginated describes; 0: 1000 (EC2 allows 5..1000)

	// Handoff is the credentials handoff file (HandoffFile in the state dir);
	// "" : none. With web identity or container credentials in the
	// environment the client writes it (unless HandoffReadOnly); with only
	// the instance role to go on it uses the file's instead.
	Handoff         string
	HandoffReadOnly bool
}

const (
	defaultHTTPTimeout = 10 * time.Second
	defaultPageSize    = 1000
	imdsDefaultURL     = "http://169.254.169.254"
)

// AttemptTimeout is the per-request HTTP timeout for calls made under ctx:
// the time left until its deadline plus attemptSlack, so that the caller's
// deadline alone bounds a call in both directions (a fixed per-attempt
// timeout would give up on a hung endpoint after attempts × timeout, long
// before a generous deadline, and the deadline already cuts retries short)
// and always fires first, so the error says the deadline ran out. 0, the
// default, without a deadline.
func AttemptTimeout(ctx context.Context) time.Duration {
	dl, ok := ctx.Deadline()
	if !ok {
		return 0
	}
	return max(time.Until(dl), 0) + attemptSlack
}

// attemptSlack keeps the per-attempt HTTP timeout behind the caller's
// deadline: the two timers started together would race.
const attemptSlack = time.Second

// Client reaches EC2 and IMDS. It is safe for concurrent use.
type Client struct {
	opts Options
	now  func() time.Time

	mu          sync.Mutex
	cfg         *aws.Config
	imds        *imds.Client
	ec2         ec2Handle // built on first use
	ec2URL      string    // for messages: where EC2 calls go
	ec2Endpoint string    // AWS_ENDPOINT_URL_EC2 or AWS_ENDPOINT_URL, when honoured
	imdsURL     string
	identity    *Identity // cached: it never changes for an instance
	region      string    // the EC2 client's, for STS
	stsEndpoint string
	credSource  credSource

	transport func(*http.Transport) // tests: instruments the HTTP transport; nil in production
}

// New returns a Client. It does no I/O; the first call that needs EC2 or
// IMDS loads the configuration.
func New(ctx context.Context, opts Options) (*Client, error) {
	if opts.HTTPTimeout < 0 || opts.MaxAttempts < 0 || opts.MaxBackoff < 0 || opts.PageSize < 0 {
		return nil, errors.New("cloud: negative HTTPTimeout, MaxAttempts, MaxBackoff or PageSize")
	}
	if opts.HTTPTimeout == 0 {
		opts.HTTPTimeout = defaultHTTPTimeout
	}
	if opts.PageSize == 0 {
		opts.PageSize = defaultPageSize
	}
	if opts.PageSize < 5 || opts.PageSize > 1000 {
		return nil, fmt.Errorf("cloud: PageSize %d out of EC2's range 5..1000", opts.PageSize)
	}
	if opts.DescribeBudget == (BucketRate{}) {
		opts.DescribeBudget = DefaultDescribeBudget
	}
	if opts.MutatingBudget == (BucketRate{}) {
		opts.MutatingBudget = DefaultMutatingBudget
	}
	return &Client{opts: opts, now: time.Now}, nil
}

// awsConfig builds the SDK configuration, and the IMDS client, once. It is
// built by hand rather than with config.LoadDefaultConfig, whose STS, SSO
// and sign-in dependencies cost every process (the plugin runs per pod)
// their package initialisation. Callers hold c.mu.
func (c *Client) awsConfig(context.Context) (*aws.Config, error) {
	if c.cfg != nil {
		return c.cfg, nil
	}
	s, err := loadAWSSettings(os.Getenv, os.ReadFile)
	if err != nil {
		return nil, configError(err)
	}
	if c.opts.Region != "" {
		s.Region = c.opts.Region
	}
	hc, err := httpClient(c.opts.HTTPTimeout, s.CABundle)
	if err != nil {
		return nil, configError(err)
	}
	if c.transport != nil {
		hc = hc.WithTransportOptions(c.transport)
	}
	cfg := aws.Config{Region: s.Region, HTTPClient: hc, RetryMaxAttempts: s.MaxAttempts, RetryMode: s.RetryMode}
	c.imdsURL = s.IMDS.url()
	c.imds = imds.NewFromConfig(cfg, s.IMDS.options, c.imdsOptions)
	c.ec2Endpoint, c.cfg = s.Endpoint, &cfg
	c.useHandoff(&s)
	c.stsEndpoint, c.credSource = s.STSEndpoint, s.Creds
	role := ec2rolecreds.New(func(o *ec2rolecreds.Options) { o.Client = c.imds })
	cfg.Credentials = aws.NewCredentialsCache(c.provider(s.Creds, role))
	return c.cfg, nil
}

// useHandoff shares this process's web identity or container credentials
// through the handoff file, or, when it has only the instance role, takes
// the file's. A failed write is left to the pass's own credential error.
func (c *Client) useHandoff(s *awsSettings) {
	if c.opts.Handoff == "" {
		return
	}
	if !s.Creds.instanceRole() {
		if !c.opts.HandoffReadOnly {
			_ = shareCredentials(c.opts.Handoff, *s)
		}
		return
	}
	if src, endpoint, ok := handedOff(c.opts.Handoff); ok {
		s.Creds = src
		if s.STSEndpoint == "" {
			s.STSEndpoint = endpoint
		}
	}
}

// CredentialSource says, without I/O beyond the configuration, where EC2
// credentials come from: "the instance role (IMDS)", "web identity (...)".
func (c *Client) CredentialSource(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.awsConfig(ctx); err != nil {
		return "", err
	}
	if c.credSource.Err != nil {
		return "", c.credSource.Err
	}
	return c.credSource.describe(), nil
}

func configError(err error) error {
	return &Error{Op: "config", Kind: KindOther, Msg: "loading the AWS configuration: " + oneLine(err.Error()), Err: err}
}

// idleConnTimeout closes a kept-alive connection unused this long. A pass's
// calls follow each other closely; the loop makes a new client each pass,
// and the SDK's 90 s left every earlier pass's connections open (a loop
// passing every 200 ms held 150 sockets after 30 s).
const idleConnTimeout = 5 * time.Second

// httpClient is the SDK's client with our timeout and, with AWS_CA_BUNDLE,
// that bundle as the only roots (as the SDK does).
func httpClient(timeout time.Duration, caBundle string) (*awshttp.BuildableClient, error) {
	hc := awshttp.NewBuildableClient().WithTimeout(timeout).WithTransportOptions(func(tr *http.Transport) {
		tr.IdleConnTimeout = idleConnTimeout
	})
	if caBundle == "" {
		return hc, nil
	}
	pem, err := os.ReadFile(caBundle)
	if err != nil {
		return nil, fmt.Errorf("AWS_CA_BUNDLE: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("AWS_CA_BUNDLE: no PEM certificate in %s", caBundle)
	}
	return hc.WithTransportOptions(func(tr *http.Transport) {
		if tr.TLSClientConfig == nil {
			tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		tr.TLSClientConfig.RootCAs = roots
	}), nil
}

func (c *Client) imdsOptions(o *imds.Options) {
	if c.opts.MaxBackoff > 0 {
		o.DisableDefaultMaxBackoff = true
		o.Retryer = retry.AddWithMaxBackoffDelay(retry.NewStandard(), c.opts.MaxBackoff)
	}
}

// metadata returns the IMDS client, built on first use.
func (c *Client) metadata(ctx context.Context) (*imds.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.metadataLocked(ctx)
}

func (c *Client) metadataLocked(ctx context.Context) (*imds.Client, error) {
	if _, err := c.awsConfig(ctx); err != nil {
		return nil, err
	}
	return c.imds, nil
}

// api returns the EC2 client, built on first use; with no region configured
// it asks IMDS for one.
func (c *Client) api(ctx context.Context) (*ec2.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ec2.empty() {
		return c.ec2.client(), nil
	}
	cfg, err := c.awsConfig(ctx)
	if err != nil {
		return nil, err
	}
	region := cfg.Region
	if region == "" {
		if region, err = c.imdsRegion(ctx); err != nil {
			return nil, err
		}
	}
	c.ec2URL, c.region = "https://ec2."+region+".amazonaws.com", region
	api := ec2.NewFromConfig(*cfg, func(o *ec2.Options) { c.ec2Options(o, region) })
	c.ec2 = handleOf(api)
	return api, nil
}

func (c *Client) ec2Options(o *ec2.Options, region string) {
	o.Region = region
	o.HTTPClient = readOnlyBodies{o.HTTPClient}
	if c.ec2Endpoint != "" {
		o.BaseEndpoint = aws.String(c.ec2Endpoint)
	}
	if o.BaseEndpoint != nil {
		c.ec2URL = strings.TrimRight(*o.BaseEndpoint, "/")
	}
	if c.opts.MaxAttempts > 0 {
		o.RetryMaxAttempts = c.opts.MaxAttempts
	}
	if c.opts.MaxBackoff > 0 {
		o.Retryer = retry.AddWithMaxBackoffDelay(o.Retryer, c.opts.MaxBackoff)
	}
	if c.opts.UserAgent != "" {
		o.APIOptions = append(o.APIOptions, awsmiddleware.AddUserAgentKey(c.opts.UserAgent))
	}
	if c.opts.Budget != nil {
		o.APIOptions = append(o.APIOptions, addBudget(&budgetMiddleware{
			budget: c.opts.Budget, describe: c.opts.DescribeBudget, mutating: c.opts.MutatingBudget, now: c.now,
		}))
	}
}

// imdsRegion reads placement/region. Callers hold c.mu.
func (c *Client) imdsRegion(ctx context.Context) (string, error) {
	md, err := c.metadataLocked(ctx)
	if err != nil {
		return "", err
	}
	region, err := getMetadata(ctx, md, c.imdsURL, "placement/region")
	if err != nil {
		return "", &Error{Op: "config", Kind: Classify(err), Err: err,
			Msg: "no AWS region: set AWS_REGION, or run on EC2 (" + err.Error() + ")"}
	}
	return region, nil
}

// endpoints says where calls go, for messages.
func (c *Client) endpoints() (ec2URL, imdsURL string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ec2URL, c.imdsURL
}

// call runs one EC2 operation and classifies its error.
func call[T any](ctx context.Context, c *Client, action string, fn func(ec2Handle) (T, error)) (T, error) {
	var zero T
	api, err := c.api(ctx)
	if err != nil {
		return zero, err
	}
	out, err := fn(handleOf(api))
	if err != nil {
		u, _ := c.endpoints()
		return zero, ec2Error(action, u, c.whichTimeout(ctx, err))
	}
	return out, nil
}

// whichTimeout marks a timeout that fired while the caller still had time:
// one attempt's HTTP timeout, not the caller's deadline. The two read the
// same to the SDK (both match context.DeadlineExceeded), but the advice
// differs: a per-attempt timeout is fixed by the endpoint or HTTPTimeout,
// the deadline by the caller (a pass's --timeout).
func (c *Client) whichTimeout(ctx context.Context, err error) error {
	if ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &AttemptTimeoutError{After: c.opts.HTTPTimeout, Err: err}
}

// AttemptTimeoutError is a call that failed on its per-attempt HTTP timeout
// before the caller's deadline.
type AttemptTimeoutError struct {
	After time.Duration
	Err   error
}

func (e *AttemptTimeoutError) Error() string {
	return fmt.Sprintf("request timed out after %s: %v", e.After, e.Err)
}

func (e *AttemptTimeoutError) Unwrap() error { return e.Err }
