package ec2sim

import (
	"encoding/xml"
	"errors"
	"net/http"
	"strings"
	"time"
)

const stsNamespace = "https://sts.amazonaws.com/doc/2011-06-15/"

// stsAction is the STS Query action served at POST /sts (or at POST /
// when the form's Action is one of them); nil for another name. A switch,
// not a map: no package initialisation in the binary.
func stsAction(name string) func(*Sim, form) (any, *stsError) {
	switch name {
	case "AssumeRoleWithWebIdentity":
		return (*Sim).assumeRoleWithWebIdentity
	case "AssumeRole":
		return (*Sim).assumeRole
	}
	return nil
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
	return stsAction(r.PostForm.Get("Action")) != nil
}

func (s *Sim) serveSTS(w http.ResponseWriter, r *http.Request) {
	reqID := newRequestID()
	if err := r.ParseForm(); err != nil {
		writeSTSError(w, reqID, &stsError{400, "MalformedInput", err.Error()})
		return
	}
	f := form(r.PostForm)
	action := f.get("Action")
	run := stsAction(action)
	if run == nil {
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

// parseRoleARN splits arn:aws:iam::ACCOUNT:role/[PATH/]NAME (no package
// level regexp: the emulator is linked into the binary every plugin start
// initialises).
func parseRoleARN(arn string) (account, name string, ok bool) {
	rest, found := strings.CutPrefix(arn, "arn:aws:iam::")
	account, role, found2 := strings.Cut(rest, ":role/")
	if !found || !found2 || len(account) != 12 || strings.Trim(account, "0123456789") != "" || role == "" {
		return "", "", false
	}
	return account, role[strings.LastIndex(role, "/")+1:], true
}

// roleParams checks RoleArn and RoleSessionName and returns the
// assumed-role user and the duration asked for.
func (s *Sim) roleParams(f form) (assumedRoleXML, time.Duration, *stsError) {
	account, name, ok := parseRoleARN(f.get("RoleArn"))
	if !ok {
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
	return assumedRoleXML{Arn: "arn:aws:sts::" + account + ":assumed-role/" + name + "/" + session,
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
