package ec2sim

import (
	"maps"
	"slices"
	"strings"
)

// noteENICalls counts the request against every ENI it names: by
// NetworkInterfaceId (and its .N list), ResourceId.N, or AttachmentId (the
// ENI attached by it). Failed and throttled calls count, as in Counters.
// The caller holds s.mu.
func (s *Sim) noteENICalls(action string, f form) {
	var ids []string
	for key, vals := range f {
		switch {
		case key == "NetworkInterfaceId", strings.HasPrefix(key, "NetworkInterfaceId."), strings.HasPrefix(key, "ResourceId."):
			ids = append(ids, vals...)
		case key == "AttachmentId":
			for _, e := range s.enis {
				if e.attach != nil && slices.Contains(vals, e.attach.id) {
					ids = append(ids, e.id)
				}
			}
		}
	}
	for _, id := range ids {
		if !strings.HasPrefix(id, "eni-") {
			continue
		}
		if s.eniCalls[id] == nil {
			s.eniCalls[id] = map[string]int{}
		}
		s.eniCalls[id][action]++
	}
}

// ENICalls returns the calls per EC2 action that named the ENI (see
// noteENICalls); nil when none did. ResetCounters zeroes them too.
func (s *Sim) ENICalls(id string) map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.eniCalls[id])
}
