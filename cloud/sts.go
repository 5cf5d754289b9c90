package cloud

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/smithy-go"
)

// stsClient makes the two STS calls the credential chain needs, on the wire
// aws-sdk-go-v2's service/sts and credentials/stscreds use (Query protocol,
// version 2011-06-15; AssumeRoleWithWebIdentity unsigned, AssumeRole with
// SigV4; InvalidIdentityToken retried as stscreds does). It is hand-written
// because linking service/sts costs every process, the plugin included,
// about 0.3 ms and 165 KB of package initialisation (measured with
// GODEBUG=inittrace=1), which the plugin must not pay.
type stsClient struct {
	hc         aws.HTTPClient
	endpoint   string // base URL, no trailing slash
	region     string
	creds      aws.CredentialsProvider // AssumeRole's signer; nil for web identity
	attempts   int
	maxBackoff time.Duration // 0: the SDK's 20 s
	userAgent  string
}

type stsCredentials struct {
	AccessKeyID     string    `xml:"Credentials>AccessKeyId"`
	SecretAccessKey string    `xml:"Credentials>SecretAccessKey"`
	SessionToken    string    `xml:"Credentials>SessionToken"`
	Expiration      time.Time `xml:"Credentials>Expiration"`
	RoleARN         string    `xml:"AssumedRoleUser>Arn"`
}

type stsEnvelope struct {
	Metadata struct{} `xml:"ResponseMetadata"`
	Result   stsCredentials
}

// UnmarshalXML takes the one <ActionResult> child, whatever its name.
func (e *stsEnvelope) UnmarshalXML(d *xml.Decoder, _ xml.StartElement) error {
	for {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if strings.HasSuffix(t.Name.Local, "Result") {
				if err := d.DecodeElement(&e.Result, &t); err != nil {
					return err
				}
			} else if err := d.Skip(); err != nil {
				return err
			}
		case xml.EndElement:
			return nil
		}
	}
}

type stsErrorXML struct {
	Type    string `xml:"Error>Type"`
	Code    string `xml:"Error>Code"`
	Message string `xml:"Error>Message"`
}

// stsRetryable are the codes retried besides 5xx, 429 and transport errors
// (a switch, not a map: no package initialisation).
func stsRetryable(code string) bool {
	switch code {
	case "Throttling", "ThrottlingException", "RequestLimitExceeded", "IDPCommunicationError", "InvalidIdentityToken":
		return true
	}
	return false
}

// assume runs one action and returns the credentials it gave.
func (c *stsClient) assume(ctx context.Context, action string, params url.Values, source string) (aws.Credentials, error) {
	params.Set("Action", action)
	params.Set("Version", "2011-06-15")
	res, err := c.retrying(ctx, action, []byte(params.Encode()))
	if err != nil {
		return aws.Credentials{}, err
	}
	if res.AccessKeyID == "" || res.SecretAccessKey == "" {
		return aws.Credentials{}, fmt.Errorf("operation error STS: %s: the response holds no credentials", action)
	}
	acct := ""
	if f := strings.Split(res.RoleARN, ":"); len(f) > 4 {
		acct = f[4]
	}
	return aws.Credentials{AccessKeyID: res.AccessKeyID, SecretAccessKey: res.SecretAccessKey,
		SessionToken: res.SessionToken, Source: source, CanExpire: true, Expires: res.Expiration, AccountID: acct}, nil
}

func (c *stsClient) retrying(ctx context.Context, action string, body []byte) (stsCredentials, error) {
	backoff := retry.NewExponentialJitterBackoff(20 * time.Second)
	if c.maxBackoff > 0 {
		backoff = retry.NewExponentialJitterBackoff(c.maxBackoff)
	}
	for attempt := 1; ; attempt++ {
		res, retryable, err := c.once(ctx, action, body)
		if err == nil || !retryable || attempt >= c.attempts || ctx.Err() != nil {
			return res, err
		}
		delay, _ := backoff.BackoffDelay(attempt, err)
		select {
		case <-ctx.Done():
			return res, err
		case <-time.After(delay):
		}
	}
}

// once is one HTTP attempt: the result, or the error and whether to retry.
func (c *stsClient) once(ctx context.Context, action string, body []byte) (stsCredentials, bool, error) {
	var res stsCredentials
	req, err := c.request(ctx, body)
	if err != nil {
		return res, false, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return res, true, fmt.Errorf("operation error STS: %s: %w", action, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return res, true, fmt.Errorf("operation error STS: %s: reading the answer: %w", action, err)
	}
	if resp.StatusCode/100 != 2 {
		var e stsErrorXML
		_ = xml.Unmarshal(data, &e)
		if e.Code == "" {
			e.Code, e.Message = strconv.Itoa(resp.StatusCode), oneLine(string(data))
		}
		api := &smithy.GenericAPIError{Code: e.Code, Message: e.Message, Fault: smithy.FaultClient}
		retry := resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests || stsRetryable(e.Code)
		return res, retry, fmt.Errorf("operation error STS: %s, HTTP %d: %w", action, resp.StatusCode, api)
	}
	var env stsEnvelope
	if err := xml.Unmarshal(data, &env); err != nil {
		return res, false, fmt.Errorf("operation error STS: %s: decoding the answer: %w", action, err)
	}
	return env.Result, false, nil
}

func (c *stsClient) request(ctx context.Context, body []byte) (*http.Request, error) {
	if c.endpoint == "" {
		return nil, errors.New("no AWS region for STS: set AWS_REGION (or AWS_ENDPOINT_URL_STS)")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint+"/", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	req.Header.Set("User-Agent", strings.TrimSpace("vpc-cni "+c.userAgent))
	if c.creds == nil {
		return req, nil
	}
	creds, err := c.creds.Retrieve(ctx)
	if err != nil {
		return nil, fmt.Errorf("the source credentials for sts:AssumeRole: %w", err)
	}
	sum := sha256.Sum256(body)
	err = v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "sts", c.region, time.Now())
	return req, err
}

// stsEndpointFor is STS's regional endpoint (never the global one, as
// AWS_STS_REGIONAL_ENDPOINTS=regional and the SDK's current default).
func stsEndpointFor(region string) string {
	switch {
	case region == "":
		return ""
	case strings.HasPrefix(region, "cn-"):
		return "https://sts." + region + ".amazonaws.com.cn"
	}
	return "https://sts." + region + ".amazonaws.com"
}

// webIdentityProvider is stscreds.WebIdentityRoleProvider's Retrieve: the
// token re-read on every call, the session name defaulting to the time.
type webIdentityProvider struct {
	newSTS func() *stsClient
	w      *webIdentity
}

func (p webIdentityProvider) Retrieve(ctx context.Context) (aws.Credentials, error) {
	tok, err := p.w.Token.read()
	if err != nil {
		return aws.Credentials{}, err
	}
	session := p.w.SessionName
	if session == "" {
		session = strconv.FormatInt(time.Now().UnixNano(), 10)
	}
	return p.newSTS().assume(ctx, "AssumeRoleWithWebIdentity", url.Values{"RoleArn": {p.w.RoleARN},
		"RoleSessionName": {session}, "WebIdentityToken": {tok}}, "WebIdentityCredentials")
}

// assumeRoleProvider is stscreds.AssumeRoleProvider's Retrieve.
type assumeRoleProvider struct {
	newSTS func() *stsClient
	r      *assumeRole
}

func (p assumeRoleProvider) Retrieve(ctx context.Context) (aws.Credentials, error) {
	session := p.r.SessionName
	if session == "" {
		session = fmt.Sprintf("aws-go-sdk-%d", time.Now().UTC().UnixNano())
	}
	params := url.Values{"RoleArn": {p.r.RoleARN}, "RoleSessionName": {session}}
	if p.r.ExternalID != "" {
		params.Set("ExternalId", p.r.ExternalID)
	}
	return p.newSTS().assume(ctx, "AssumeRole", params, "AssumeRoleProvider")
}
