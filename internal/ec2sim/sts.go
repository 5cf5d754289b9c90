package ec2sim

import (
	"encoding/xml"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"time"
)

const stsNamespace = "https://sts.amazonaws.com/doc/2011-06-15/"

// stsActions are the STS Query actions served at POST /sts (or at POST /
// when the form's Action is one of them).
var stsActions = map[string]func(*Sim, form) (any, *stsError){
	"AssumeRoleWithWebIdentity": (*Sim).assumeRoleWithWebIdentity,
	"AssumeRole":                (*Sim).assumeRole,
}

type stsError struct {
	status     int
	code, text string
}

// isSTSRequest: the /sts path, or a Query POST naming an STS action.
func isSTSRequest(r *http.Request) bool {
	if r.Method != http.MethodPost {
		return false
	}
	if strings.HasPrefix(r.URL.Path, "/sts") {
		return true
	}
	if r.ParseForm() != nil {
		return false
	}
	_, ok := stsActions[r.PostForm.Get("Action")]
	return ok
}

func (s *Sim) serveSTS(w http.ResponseWriter, r *http.Request) {
	reqID := newRequestID()
	if err := r.ParseForm(); err != nil {
		writeSTSError(w, reqID, &stsError{400, "MalformedInput", err.Error()})
		return
	}
	f := form(r.PostForm)
	action := f.get("Action")
	run, ok := stsActions[action]
	if !ok {
		writeSTSError(w, reqID, &stsError{400, "InvalidAction", "Could not find operation " + action})
		return
	}
	s.mu.Lock()
	s.counters["STS:"+action]++
	res, serr := run(s, f)
	s.mu.Unlock()
	if serr != nil {
		writeSTSError(w, reqID, serr)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("x-amzn-RequestId", reqID)
	_, _ = w.Write([]byte(xml.Header))
	start := xml.StartElement{Name: xml.Name{Local: action + "Response"},
		Attr: []xml.Attr{{Name: xml.Name{Local: "xmlns"}, Value: stsNamespace}}}
	_ = xml.NewEncoder(w).EncodeElement(stsResponse{Result: res, RequestID: reqID}, start)
}

type stsResponse struct {
	Result    any    `xml:",any"`
	RequestID string `xml:"ResponseMetadata>RequestId"`
}

type stsCredsXML struct {
	AccessKeyID     string `xml:"AccessKeyId"`
	SecretAccessKey string `xml:"SecretAccessKey"`
	SessionToken    string `xml:"SessionToken"`
	Expiration      string `xml:"Expiration"`
}

type assumedRoleXML struct {
	Arn           string `xml:"Arn"`
	AssumedRoleID string `xml:"AssumedRoleId"`
}

type webIdentityResult struct {
	XMLName     xml.Name       `xml:"AssumeRoleWithWebIdentityResult"`
	Subject     string         `xml:"SubjectFromWebIdentityToken"`
	Audience    string         `xml:"Audience"`
	User        assumedRoleXML `xml:"AssumedRoleUser"`
	Credentials stsCredsXML    `xml:"Credentials"`
	Provider    string         `xml:"Provider"`
}

type assumeRoleResult struct {
	XMLName     xml.Name       `xml:"AssumeRoleResult"`
	User        assumedRoleXML `xml:"AssumedRoleUser"`
	Credentials stsCredsXML    `xml:"Credentials"`
}

var roleARN = regexp.MustCompile(`^arn:aws:iam::([0-9]{12}):role/([\w+=,.@/-]+)$`)

// roleParams checks RoleArn and RoleSessionName and returns the
// assumed-role user and the duration asked for.
func (s *Sim) roleParams(f form) (assumedRoleXML, time.Duration, *stsError) {
	m := roleARN.FindStringSubmatch(f.get("RoleArn"))
	if m == nil {
		return assumedRoleXML{}, 0, &stsError{400, "ValidationError", "RoleArn " + f.get("RoleArn") + " is not a role ARN"}
	}
	session := f.get("RoleSessionName")
	if session == "" {
		return assumedRoleXML{}, 0, &stsError{400, "ValidationError", "RoleSessionName is required"}
	}
	d := s.trustLocked().Duration
	if n, ok, _ := f.intParam("DurationSeconds"); ok && n > 0 {
		d = time.Duration(n) * time.Second
	}
	name := m[2][strings.LastIndex(m[2], "/")+1:]
	return assumedRoleXML{Arn: "arn:aws:sts::" + m[1] + ":assumed-role/" + name + "/" + session,
		AssumedRoleID: "AROAEC2SIM" + strings.ToUpper(s.ids.hex16()) + ":" + session}, d, nil
}

func (s *Sim) assumeRoleWithWebIdentity(f form) (any, *stsError) {
	user, d, serr := s.roleParams(f)
	if serr != nil {
		return nil, serr
	}
	t := s.trustLocked()
	claims, err := checkToken(f.get("WebIdentityToken"), t.STSAudience, t.Subject, s.now())
	switch {
	case errors.Is(err, errTokenExpired):
		return nil, &stsError{400, "ExpiredTokenException", "Token expired: " + err.Error()}
	case err != nil && strings.HasPrefix(err.Error(), "subject"):
		return nil, &stsError{403, "AccessDenied", "Not authorized to perform sts:AssumeRoleWithWebIdentity: " + err.Error()}
	case err != nil:
		return nil, &stsError{400, "InvalidIdentityToken", err.Error()}
	}
	return webIdentityResult{Subject: claims.Sub, Audience: t.STSAudience, User: user,
		Credentials: credsXML(s.issue(d)), Provider: "arn:aws:iam::" + s.ownerID + ":oidc-provider/ec2sim"}, nil
}

// assumeRole trusts any signer (the source profile's keys): what the test
// proves is that EC2 is then called with the role's credentials.
func (s *Sim) assumeRole(f form) (any, *stsError) {
	user, d, serr := s.roleParams(f)
	if serr != nil {
		return nil, serr
	}
	return assumeRoleResult{User: user, Credentials: credsXML(s.issue(d))}, nil
}

func credsXML(c IssuedCredentials) stsCredsXML {
	return stsCredsXML{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, SessionToken: c.SessionToken,
		Expiration: c.Expiration.Format(time.RFC3339)}
}

func writeSTSError(w http.ResponseWriter, reqID string, e *stsError) {
	typ := "Sender"
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("x-amzn-RequestId", reqID)
	w.WriteHeader(e.status)
	_, _ = w.Write([]byte(xml.Header))
	body := struct {
		XMLName   xml.Name `xml:"ErrorResponse"`
		Xmlns     string   `xml:"xmlns,attr"`
		Type      string   `xml:"Error>Type"`
		Code      string   `xml:"Error>Code"`
		Message   string   `xml:"Error>Message"`
		RequestID string   `xml:"RequestId"`
	}{Xmlns: stsNamespace, Type: typ, Code: e.code, Message: e.text, RequestID: reqID}
	_ = xml.NewEncoder(w).Encode(body)
}
