package cloud

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials/endpointcreds"
)

// tokenSource is a projected service account token: a file read on every
// call (kubelet rotates it), or a value.
type tokenSource struct {
	File, Inline string
	Var          string // what named the file, for messages
}

func (t tokenSource) empty() bool { return t.File == "" && t.Inline == "" }

func (t tokenSource) read() (string, error) {
	if t.File == "" {
		return t.Inline, nil
	}
	b, err := os.ReadFile(t.File)
	if err != nil {
		return "", &TokenError{Msg: fmt.Sprintf("cannot read the token file %s (%s): %v", t.File, t.Var, unwrapPath(err))}
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", &TokenError{Msg: fmt.Sprintf("the token file %s (%s) is empty", t.File, t.Var)}
	}
	return tok, nil
}

// GetIdentityToken is stscreds.IdentityTokenRetriever.
func (t tokenSource) GetIdentityToken() ([]byte, error) {
	tok, err := t.read()
	return []byte(tok), err
}

// GetToken is endpointcreds.AuthTokenProvider.
func (t tokenSource) GetToken() (string, error) { return t.read() }

func unwrapPath(err error) error {
	var perr *os.PathError
	if errors.As(err, &perr) {
		return perr.Err
	}
	return err
}

// TokenError is a token that could not be read.
type TokenError struct{ Msg string }

func (e *TokenError) Error() string { return e.Msg }

// CredentialsError is a credential source that failed: which one, why (the
// innermost useful cause: STS's or the agent's answer, the token file),
// and what to check.
type CredentialsError struct {
	Source, Hint string
	Err          error
}

func (e *CredentialsError) Error() string {
	var te *TokenError
	if errors.As(e.Err, &te) {
		return e.Source + ": " + te.Msg
	}
	return e.Source + ": " + apiDetail(e.Err)
}

func (e *CredentialsError) Unwrap() error { return e.Err }

// namedProvider says which source failed.
type namedProvider struct {
	source, hint string
	p            aws.CredentialsProvider
}

func (n namedProvider) Retrieve(ctx context.Context) (aws.Credentials, error) {
	creds, err := n.p.Retrieve(ctx)
	if err != nil {
		return creds, &CredentialsError{Source: n.source, Hint: n.hint, Err: err}
	}
	return creds, nil
}

const (
	webIdentityHint = "the token must be current, for audience sts.amazonaws.com, and trusted by the role " +
		"(IRSA: the service account's eks.amazonaws.com/role-arn annotation and the role's trust policy)"
	containerHint = "the EKS Pod Identity agent must run on the node and the service account have a Pod Identity " +
		"association; the token is for audience pods.eks.amazonaws.com"
	assumeRoleHint = "the source credentials must be allowed sts:AssumeRole on the role, and the role trust them"
	handoffHint    = "the vpc-cni pod refreshes this copy of its token on every pass: is the vpc-cni DaemonSet " +
		"pod running on this node, with its service account's credentials?"
)

// hintFor is what to check when the source fails; a handed-off token's
// first suspect is the pod that hands it off.
func hintFor(s credSource, hint string) string {
	origin := ""
	switch {
	case s.WebIdentity != nil:
		origin = s.WebIdentity.Origin
	case s.Container != nil:
		origin = s.Container.Origin
	}
	if strings.HasPrefix(origin, handoffOrigin) {
		return handoffHint + " (" + hint + ")"
	}
	return hint
}

// provider builds the SDK provider for the chosen source; role is the
// instance role, used when nothing else is set up. Callers hold c.mu.
func (c *Client) provider(s credSource, role aws.CredentialsProvider) aws.CredentialsProvider {
	switch {
	case s.Err != nil:
		return failingProvider(s.Err)
	case s.Static != nil:
		return staticProvider(*s.Static)
	case s.WebIdentity != nil:
		return namedProvider{s.describe(), hintFor(s, webIdentityHint),
			webIdentityProvider{newSTS: func() *stsClient { return c.stsClient(nil) }, w: s.WebIdentity}}
	case s.Container != nil:
		return namedProvider{s.describe(), hintFor(s, containerHint), c.containerProvider(s.Container)}
	case s.AssumeRole != nil:
		src := aws.NewCredentialsCache(c.provider(*s.AssumeRole.Source, role))
		return namedProvider{s.describe(), assumeRoleHint,
			assumeRoleProvider{newSTS: func() *stsClient { return c.stsClient(src) }, r: s.AssumeRole}}
	}
	return role
}

// containerProvider: callers hold c.mu (it runs from awsConfig).
func (c *Client) containerProvider(cc *containerCreds) aws.CredentialsProvider {
	hc := c.cfg.HTTPClient
	return endpointcreds.New(cc.URI, func(o *endpointcreds.Options) {
		o.HTTPClient = hc
		if !cc.Token.empty() {
			o.AuthorizationTokenProvider = cc.Token
		}
		if c.opts.MaxBackoff > 0 {
			o.Retryer = retry.AddWithMaxBackoffDelay(retry.NewStandard(), c.opts.MaxBackoff)
		}
	})
}

// stsClient is built on a provider's first call, for the region the EC2
// client resolved.
func (c *Client) stsClient(creds aws.CredentialsProvider) *stsClient {
	c.mu.Lock()
	defer c.mu.Unlock()
	endpoint := strings.TrimRight(c.stsEndpoint, "/")
	if endpoint == "" {
		endpoint = stsEndpointFor(c.region)
	}
	attempts := c.opts.MaxAttempts
	if attempts == 0 {
		attempts = c.cfg.RetryMaxAttempts // AWS_MAX_ATTEMPTS
	}
	if attempts == 0 {
		attempts = 3 // the SDK's standard retryer
	}
	return &stsClient{hc: c.cfg.HTTPClient, endpoint: endpoint, region: c.region, creds: creds, attempts: attempts,
		maxBackoff: c.opts.MaxBackoff, userAgent: c.opts.UserAgent}
}
