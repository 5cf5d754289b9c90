package ec2sim

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Trust is who the emulated STS and Pod Identity agent accept: the
// audiences EKS projects tokens for and the service account's subject.
type Trust struct {
	STSAudience         string // default "sts.amazonaws.com"
	PodIdentityAudience string // default "pods.eks.amazonaws.com"
	Subject             string // default "system:serviceaccount:kube-system:vpc-cni"
	Duration            time.Duration
	// IssuedOnly makes EC2 refuse every request not signed with credentials
	// this emulator issued (and not yet expired), with AuthFailure: tests
	// prove the request went through STS or the agent, not static keys.
	IssuedOnly bool
}

func (t Trust) withDefaults() Trust {
	if t.STSAudience == "" {
		t.STSAudience = "sts.amazonaws.com"
	}
	if t.PodIdentityAudience == "" {
		t.PodIdentityAudience = "pods.eks.amazonaws.com"
	}
	if t.Subject == "" {
		t.Subject = "system:serviceaccount:kube-system:vpc-cni"
	}
	if t.Duration <= 0 {
		t.Duration = time.Hour
	}
	return t
}

// SetTrust replaces the identity rules (zero fields take the defaults).
func (s *Sim) SetTrust(t Trust) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trust = t.withDefaults()
}

func (s *Sim) trustLocked() Trust {
	if s.trust.Subject == "" {
		s.trust = s.trust.withDefaults()
	}
	return s.trust
}

// IssuedCredentials are temporary credentials handed out by STS or the
// Pod Identity endpoint.
type IssuedCredentials struct {
	AccessKeyID, SecretAccessKey, SessionToken string
	Expiration                                 time.Time
}

// issue mints credentials valid for d and remembers them. Callers hold s.mu.
func (s *Sim) issue(d time.Duration) IssuedCredentials {
	if s.issued == nil {
		s.issued = map[string]time.Time{}
	}
	c := IssuedCredentials{AccessKeyID: "ASIA" + strings.ToUpper(s.ids.hex16()),
		SecretAccessKey: "ec2sim-" + s.ids.hex16() + s.ids.hex16(), SessionToken: "ec2sim-session-" + s.ids.hex16(),
		Expiration: s.now().Add(d).UTC().Truncate(time.Second)}
	s.issued[c.AccessKeyID] = c.Expiration
	return c
}

// MintToken makes an unsigned JWT ("alg": "none") with these claims, as a
// projected service account token looks to a verifier that does not check
// the signature (the emulator trusts its tests, not a key).
func MintToken(audience, subject string, expires time.Time) string {
	enc := base64.RawURLEncoding
	head := enc.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))
	body, _ := json.Marshal(map[string]any{"aud": []string{audience}, "sub": subject,
		"iss": "https://oidc.eks.us-west-2.amazonaws.com/id/EC2SIM", "exp": expires.Unix(), "iat": expires.Add(-24 * time.Hour).Unix()})
	return head + "." + enc.EncodeToString(body) + "."
}

type jwtClaims struct {
	Aud audience `json:"aud"`
	Sub string   `json:"sub"`
	Exp int64    `json:"exp"`
}

// audience is the JWT "aud": one string or a list.
type audience []string

func (a *audience) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*a = audience{one}
		return nil
	}
	return json.Unmarshal(b, (*[]string)(a))
}

var errTokenExpired = errors.New("token expired")

// checkToken parses a JWT (the signature is not checked) and applies the
// trust rules: audience, subject, expiry.
func checkToken(tok, wantAud, wantSub string, now time.Time) (jwtClaims, error) {
	var c jwtClaims
	parts := strings.Split(strings.TrimSpace(tok), ".")
	if len(parts) != 3 {
		return c, errors.New("the token is not a JWT")
	}
	body, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil || json.Unmarshal(body, &c) != nil {
		return c, errors.New("the token's claims are not base64url JSON")
	}
	if now.Unix() >= c.Exp {
		return c, fmt.Errorf("%w: current date/time %s must be before the expiration date/time %s", errTokenExpired,
			now.UTC().Format(time.RFC3339), time.Unix(c.Exp, 0).UTC().Format(time.RFC3339))
	}
	ok := false
	for _, a := range c.Aud {
		ok = ok || a == wantAud
	}
	if !ok {
		return c, fmt.Errorf("incorrect token audience %q, want %q", strings.Join(c.Aud, ","), wantAud)
	}
	if c.Sub != wantSub {
		return c, fmt.Errorf("subject %q is not trusted, want %q", c.Sub, wantSub)
	}
	return c, nil
}

// refuseUnissued answers an EC2 request that IssuedOnly refuses; it reports
// whether it did.
func (s *Sim) refuseUnissued(w http.ResponseWriter, r *http.Request) bool {
	_, cred, _ := strings.Cut(r.Header.Get("Authorization"), "Credential=")
	key, _, _ := strings.Cut(cred, "/")
	s.mu.Lock()
	exp, known := s.issued[key]
	var refusal *apiError
	switch {
	case !s.trustLocked().IssuedOnly:
	case !known:
		refusal = newAPIError("AuthFailure",
			"AWS was not able to validate the provided access credentials (key %q was not issued by STS)", key)
	case !s.now().Before(exp):
		refusal = newAPIError("ExpiredToken", "The security token included in the request is expired")
	}
	if refusal != nil {
		s.counters["refused:"+refusal.Code]++
	}
	s.mu.Unlock()
	if refusal == nil {
		return false
	}
	writeXMLError(w, newRequestID(), refusal)
	return true
}

// IdentityEnv points the SDK at this emulator, STS included
// (AWS_ENDPOINT_URL_STS), with no static keys and no shared files: the
// caller adds the web identity or container credentials variables.
func (s *Sim) IdentityEnv() []string {
	u := s.URL()
	return []string{
		"AWS_REGION=" + s.cfg.Region,
		"AWS_ENDPOINT_URL_EC2=" + u,
		"AWS_ENDPOINT_URL_STS=" + u + "/sts",
		"AWS_EC2_METADATA_SERVICE_ENDPOINT=" + u,
		"AWS_CONFIG_FILE=/dev/null",
		"AWS_SHARED_CREDENTIALS_FILE=/dev/null",
	}
}
