package ec2sim

import (
	"maps"
	"net/url"
	"slices"
)

// Request is one EC2 call as it arrived: its action and every parameter
// (Action and Version included). Failed and throttled calls are recorded,
// as in Counters.
type Request struct {
	Action string
	Params url.Values
}

// maxRequests bounds the record: a long run keeps the newest.
const maxRequests = 10000

// noteRequest records the call. The caller holds s.mu.
func (s *Sim) noteRequest(action string, f form) {
	if len(s.requests) == maxRequests {
		s.requests = slices.Delete(s.requests, 0, maxRequests/10)
	}
	s.requests = append(s.requests, Request{Action: action, Params: cloneValues(url.Values(f))})
}

// Requests returns the recorded calls of action ("" for every action),
// oldest first. ResetCounters clears the record.
func (s *Sim) Requests(action string) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.requests {
		if action == "" || r.Action == action {
			out = append(out, Request{Action: r.Action, Params: cloneValues(r.Params)})
		}
	}
	return out
}

func cloneValues(v url.Values) url.Values {
	out := maps.Clone(v)
	for k, vals := range out {
		out[k] = slices.Clone(vals)
	}
	return out
}
