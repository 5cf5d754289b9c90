package ec2sim

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"
)

// actionFunc runs one EC2 action under the mutex.
type actionFunc func(s *Sim, f form) (response, *apiError)

// actions is built on first use: the emulator ships in the one binary, whose
// package initialisers run at every plugin start.
var actions = sync.OnceValue(func() map[string]actionFunc {
	return map[string]actionFunc{
		"DescribeInstances":               (*Sim).describeInstances,
		"DescribeInstanceTypes":           (*Sim).describeInstanceTypes,
		"DescribeNetworkInterfaces":       (*Sim).describeNetworkInterfaces,
		"DescribeSubnets":                 (*Sim).describeSubnets,
		"DescribeSecurityGroups":          (*Sim).describeSecurityGroups,
		"CreateNetworkInterface":          (*Sim).createNetworkInterface,
		"AttachNetworkInterface":          (*Sim).attachNetworkInterface,
		"DetachNetworkInterface":          (*Sim).detachNetworkInterface,
		"DeleteNetworkInterface":          (*Sim).deleteNetworkInterface,
		"ModifyNetworkInterfaceAttribute": (*Sim).modifyNetworkInterfaceAttribute,
		"AssignPrivateIpAddresses":        (*Sim).assignPrivateIPAddresses,
		"UnassignPrivateIpAddresses":      (*Sim).unassignPrivateIPAddresses,
		"AssignIpv6Addresses":             (*Sim).assignIPv6Addresses,
		"UnassignIpv6Addresses":           (*Sim).unassignIPv6Addresses,
		"CreateTags":                      (*Sim).createTags,
		"DeleteTags":                      (*Sim).deleteTags,
	}
})

func (s *Sim) serveEC2(w http.ResponseWriter, r *http.Request) {
	reqID := newRequestID()
	if err := r.ParseForm(); err != nil {
		writeXMLError(w, reqID, newAPIError("MalformedQueryString", "%v", err))
		return
	}
	f := form(r.PostForm)
	action := f.get("Action")
	s.noteAccessKey(r.Header.Get("Authorization"))
	latency, apiErr := s.admit(action, f)
	if latency > 0 {
		time.Sleep(latency)
	}
	if apiErr != nil {
		writeXMLError(w, reqID, apiErr)
		return
	}
	resp, apiErr := s.run(action, f)
	if apiErr != nil {
		writeXMLError(w, reqID, apiErr)
		return
	}
	writeXMLResponse(w, action, reqID, resp)
}

// admit counts the request and decides the faults it meets before any
// effect: injected failures, throttling, 5xx, IAM denial, unknown action.
func (s *Sim) admit(action string, f form) (time.Duration, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counters[action]++
	s.noteENICalls(action, f)
	if action == "" {
		return 0, newAPIError("MissingAction", "The request must contain the parameter Action.")
	}
	if err := s.takeFailNext(action); err != nil {
		return s.faults.Latency, err
	}
	if s.faults.ThrottleRate > 0 && s.rng.Float64() < s.faults.ThrottleRate {
		return s.faults.Latency, injectedError("RequestLimitExceeded", action)
	}
	if s.faults.ServerErrorRate > 0 && s.rng.Float64() < s.faults.ServerErrorRate {
		return s.faults.Latency, injectedError("InternalError", action)
	}
	if _, ok := actions()[action]; !ok {
		return s.faults.Latency, newAPIError("InvalidAction", "The action %s is not valid for this web service.", action)
	}
	if s.denied[action] {
		return s.faults.Latency, s.unauthorized(action)
	}
	return s.faults.Latency, nil
}

func (s *Sim) run(action string, f form) (response, *apiError) {
	dry, _, err := f.boolParam("DryRun")
	if err != nil {
		return nil, err
	}
	if dry {
		return nil, s.dryRun(action, f)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return actions()[action](s, f)
}

func newRequestID() string {
	a, b := rand.Uint64(), rand.Uint64()
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", uint32(a>>32), uint16(a>>16), uint16(a)&0xfff,
		uint16(b>>48)&0x3fff|0x8000, b&0xffffffffffff)
}

// noteAccessKey remembers the access key that signed the last request (from
// "Credential=AKID/date/region/ec2/aws4_request"), so tests can see which
// credentials the SDK chose. The signature itself is not checked.
func (s *Sim) noteAccessKey(authz string) {
	_, cred, ok := strings.Cut(authz, "Credential=")
	if !ok {
		return
	}
	key, _, _ := strings.Cut(cred, "/")
	s.mu.Lock()
	s.lastAccessKey = key
	s.mu.Unlock()
}

// LastAccessKey is the access key id that signed the latest EC2 request.
func (s *Sim) LastAccessKey() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastAccessKey
}
