package ec2sim

import (
	"sort"
	"strings"
)

// idemEntry remembers one CreateNetworkInterface ClientToken for the life of
// the emulator, as EC2 does for hours.
type idemEntry struct {
	fingerprint string
	eniID       string
	result      niXML
}

// fingerprint is the request's parameters, ClientToken excluded, in a
// canonical order: the same parameters give the same string.
func fingerprint(f form) string {
	keys := make([]string, 0, len(f))
	for k := range f {
		if k != "ClientToken" && k != "Action" && k != "Version" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + strings.Join(f[k], ",") + "\n")
	}
	return b.String()
}

// replayCreate answers a CreateNetworkInterface whose token was seen before:
// the stored result for the same parameters, IdempotentParameterMismatch for
// different ones. done is false for a new (or absent) token.
func (s *Sim) replayCreate(token string, f form) (resp response, err *apiError, done bool) {
	if token == "" {
		return nil, nil, false
	}
	entry, ok := s.idem[token]
	if !ok {
		return nil, nil, false
	}
	if entry.fingerprint != fingerprint(f) {
		return nil, newAPIError("IdempotentParameterMismatch",
			"The client token '%s' was already used with different parameters.", token), true
	}
	result := entry.result
	if e := s.enis[entry.eniID]; e != nil {
		result = s.eniXML(e)
	}
	return &createNIResp{NetworkInterface: result, ClientToken: token}, nil, true
}

func (s *Sim) rememberCreate(token string, f form, eniID string, result niXML) {
	if token != "" {
		s.idem[token] = idemEntry{fingerprint: fingerprint(f), eniID: eniID, result: result}
	}
}
