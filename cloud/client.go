// Package cloud talks to EC2 and the instance metadata service (IMDS)
// through aws-sdk-go-v2 and turns their failures into the few kinds the
// policy and reconcile act on (see Kind).
//
// The usual AWS environment works: AWS_REGION, the credential chain
// (environment, shared files, the instance role through IMDS),
// AWS_ENDPOINT_URL_EC2, AWS_EC2_METADATA_SERVICE_ENDPOINT, AWS_MAX_ATTEMPTS
// and AWS_RETRY_MODE. Nothing is done at package initialisation and New does
// no I/O: the SDK configuration is loaded, and the clients built, on the
// first call that needs them (the CNI plugin is a fresh process per pod).
package cloud

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials/ec2rolecreds"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// Options configure a Client. The zero value is usable.
type Options struct {
	Region      string        // overrides AWS_REGION and shared config; empty: those, else IMDS placement/region
	HTTPTimeout time.Duration // per HTTP request; default 10s
	ClusterName string        // CLUSTER_NAME: tags new ENIs, narrows the leaked-ENI sweep
	UserAgent   string        // appended to the SDK's User-Agent, e.g. "vpc-cni/1.2.3"

	// Budget is the node's shared EC2 rate budget; nil means no client-side limit.
	Budget                         RateBudget
	DescribeBudget, MutatingBudget BucketRate // zero: 2/s burst 20, and 1/s burst 10

	MaxAttempts int           // SDK attempts per call; 0: AWS_MAX_ATTEMPTS, else 3
	MaxBackoff  time.Duration // cap on the SDK's retry backoff (EC2 and IMDS); 0: SDK defaults (tests set ms)
	PageSize    int32         // MaxResults of paginated describes; 0: 1000 (EC2 allows 5..1000)
}

const (
	defaultHTTPTimeout = 10 * time.Second
	defaultPageSize    = 1000
	imdsDefaultURL     = "http://169.254.169.254"
)

// Client reaches EC2 and IMDS. It is safe for concurrent use.
type Client struct {
	opts Options
	now  func() time.Time

	mu       sync.Mutex
	cfg      *aws.Config
	imds     *imds.Client
	ec2      *ec2.Client
	ec2URL   string // for messages: where EC2 calls go
	imdsURL  string
	identity *Identity // cached: it never changes for an instance
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
		opts.DescribeBudget = defaultDescribeRate
	}
	if opts.MutatingBudget == (BucketRate{}) {
		opts.MutatingBudget = defaultMutatingRate
	}
	return &Client{opts: opts, now: time.Now}, nil
}

// awsConfig loads the SDK configuration once. Callers hold c.mu.
func (c *Client) awsConfig(ctx context.Context) (*aws.Config, error) {
	if c.cfg != nil {
		return c.cfg, nil
	}
	load := []func(*config.LoadOptions) error{
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTimeout(c.opts.HTTPTimeout)),
	}
	if c.opts.Region != "" {
		load = append(load, config.WithRegion(c.opts.Region))
	}
	if c.opts.MaxBackoff > 0 {
		// The role provider's own IMDS client waits 1s per retry; keep tests fast.
		load = append(load, config.WithEC2RoleCredentialOptions(func(o *ec2rolecreds.Options) {
			o.Client = imds.New(imds.Options{}, c.imdsOptions)
		}))
	}
	cfg, err := config.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, &Error{Op: "config", Kind: KindOther, Msg: "loading the AWS configuration: " + oneLine(err.Error()), Err: err}
	}
	c.cfg = &cfg
	return c.cfg, nil
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
	if c.imds != nil {
		return c.imds, nil
	}
	cfg, err := c.awsConfig(ctx)
	if err != nil {
		return nil, err
	}
	c.imdsURL = imdsDefaultURL
	c.imds = imds.NewFromConfig(*cfg, c.imdsOptions, func(o *imds.Options) {
		if o.Endpoint != "" {
			c.imdsURL = strings.TrimRight(o.Endpoint, "/")
		}
	})
	return c.imds, nil
}

// api returns the EC2 client, built on first use; with no region configured
// it asks IMDS for one.
func (c *Client) api(ctx context.Context) (*ec2.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ec2 != nil {
		return c.ec2, nil
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
	c.ec2URL = "https://ec2." + region + ".amazonaws.com"
	c.ec2 = ec2.NewFromConfig(*cfg, func(o *ec2.Options) { c.ec2Options(o, region) })
	return c.ec2, nil
}

func (c *Client) ec2Options(o *ec2.Options, region string) {
	o.Region = region
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
func call[T any](ctx context.Context, c *Client, action string, fn func(*ec2.Client) (T, error)) (T, error) {
	var zero T
	api, err := c.api(ctx)
	if err != nil {
		return zero, err
	}
	out, err := fn(api)
	if err != nil {
		u, _ := c.endpoints()
		return zero, ec2Error(action, u, err)
	}
	return out, nil
}
