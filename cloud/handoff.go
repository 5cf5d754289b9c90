package cloud

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"

	"vpc-cni/internal/atomicfile"
	"vpc-cni/internal/fileguard"
)

// HandoffFile is the credentials handoff's name in the state directory.
//
// Kubelet runs the plugin on the host, outside the pod whose projected
// token IRSA and Pod Identity need. So a process that has those
// credentials in its own environment (the DaemonSet's reconcile container)
// copies the current token and what to do with it (role, endpoint) into
// this root-only file on every pass, and a process with nothing better
// than the instance role (the plugin's inline grow, its background pass)
// uses it instead. No credentials are stored: the reader exchanges the
// token itself, so the file grants what the projected token already does
// to root on the node, for as long as the token lives.
const HandoffFile = "credentials-handoff.json"

const handoffOrigin = "handed off by the vpc-cni pod in "

type handoff struct {
	Version     int    `json:"version"`
	Kind        string `json:"kind"` // "web-identity" or "container"
	RoleARN     string `json:"roleArn,omitempty"`
	SessionName string `json:"roleSessionName,omitempty"`
	URI         string `json:"uri,omitempty"`
	Token       string `json:"token"`
	STSEndpoint string `json:"stsEndpoint,omitempty"`
}

// shareCredentials writes the handoff when s chose web identity or
// container credentials. It only reads the token file: no STS call.
func shareCredentials(path string, s awsSettings) error {
	h := handoff{Version: 1, STSEndpoint: s.STSEndpoint}
	var tok tokenSource
	switch c := s.Creds; {
	case c.WebIdentity != nil:
		h.Kind, h.RoleARN, h.SessionName, tok = "web-identity", c.WebIdentity.RoleARN, c.WebIdentity.SessionName, c.WebIdentity.Token
	case c.Container != nil:
		h.Kind, h.URI, tok = "container", c.Container.URI, c.Container.Token
	default:
		return nil
	}
	var err error
	if h.Token, err = tok.read(); err != nil {
		return err
	}
	b, err := json.Marshal(h)
	if err != nil || atomicfile.Same(path, b, 0o600) {
		return err
	}
	return atomicfile.Write(path, b, 0o600)
}

// handoffRule: the file is written by root (the DaemonSet's container) for
// root processes; one another user owns, or that group or others may write,
// could send the pod's token, or the EC2 calls' credentials, anywhere.
var handoffRule = fileguard.Rule{What: "credentials handoff", RootMayOwn: true, Mode: 0o600}

// handedOff reads the handoff: the source it describes, or false when there
// is none. The file's owner and mode, its uri and its stsEndpoint are
// checked as strictly as this process's own environment would be.
func handedOff(path string) (credSource, string, bool) {
	b, err := handoffRule.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return credSource{}, "", false
	}
	origin := handoffOrigin + path
	var h handoff
	if err == nil {
		err = json.Unmarshal(b, &h)
	}
	if err == nil {
		err = h.check()
	}
	tok := tokenSource{Inline: h.Token, Var: path}
	switch {
	case err != nil:
		return credSource{Err: fmt.Errorf("the credentials %s are refused: %v", origin, err)}, "", true
	case h.Kind == "web-identity":
		return credSource{WebIdentity: &webIdentity{RoleARN: h.RoleARN, SessionName: h.SessionName, Token: tok,
			Origin: origin}}, h.STSEndpoint, true
	case h.Kind == "container":
		return credSource{Container: &containerCreds{URI: h.URI, Token: tok, Origin: origin}}, "", true
	}
	return credSource{Err: fmt.Errorf("the credentials %s are of unknown kind %q", origin, h.Kind)}, "", true
}

// check holds the handoff to the rules its environment variables would
// meet: uri to the SDK's rule for AWS_CONTAINER_CREDENTIALS_FULL_URI, and
// stsEndpoint to https, or http on loopback (the emulator). The SDK lets
// AWS_ENDPOINT_URL_STS be any URL, but that is the process's own
// environment; a file is a weaker witness, and plain http elsewhere would
// carry the token in the clear.
func (h handoff) check() error {
	if h.Kind == "container" {
		if err := allowedContainerURI(h.URI); err != nil {
			return fmt.Errorf("uri %q: %w", h.URI, err)
		}
	}
	if h.STSEndpoint != "" {
		if err := allowedSTSEndpoint(h.STSEndpoint); err != nil {
			return fmt.Errorf("stsEndpoint %q: %w", h.STSEndpoint, err)
		}
	}
	return nil
}

// allowedSTSEndpoint: https anywhere, http only to loopback.
func allowedSTSEndpoint(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return err
	case u.Scheme == "https" && u.Host != "":
		return nil
	case u.Scheme == "http" && isLoopbackHost(u.Hostname()):
		return nil
	}
	return errors.New("want https, or http only to loopback")
}
