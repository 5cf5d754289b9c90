package ec2sim

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"time"
)

// Faults are injected into EC2 calls (and IMDSLag into IMDS views).
type Faults struct {
	ThrottleRate    float64       `json:"throttleRate"`    // fraction of EC2 calls answered RequestLimitExceeded (HTTP 503)
	ServerErrorRate float64       `json:"serverErrorRate"` // fraction answered InternalError (HTTP 500)
	Latency         time.Duration `json:"latency"`         // added to every EC2 call
	IMDSLag         time.Duration `json:"imdsLag"`         // IMDS shows an ENI/address change only this long after EC2 made it
	// LinkDelay: an attached ENI's link (LinkNetns) appears, and IMDS lists
	// the ENI, only this long after the attach, as on a real node.
	LinkDelay time.Duration `json:"linkDelay"`
	Seed      int64         `json:"seed"` // seeds the throttle/5xx coin flips
}

type failRule struct {
	code  string
	times int
}

// SetFaults replaces the fault settings and reseeds the coin flips.
func (s *Sim) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = f
	s.rng = rand.New(rand.NewPCG(uint64(f.Seed), uint64(f.Seed)>>1|1))
}

// CurrentFaults returns the fault settings in force.
func (s *Sim) CurrentFaults() Faults {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults
}

// FailNext makes the next `times` calls of action fail with the EC2 error code
// (and the HTTP status EC2 sends with it). Action "*" matches every action.
// A later call for the same action replaces the earlier rule; times <= 0 clears it.
func (s *Sim) FailNext(action, code string, times int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if times <= 0 {
		delete(s.failNext, action)
		return
	}
	s.failNext[action] = &failRule{code: code, times: times}
}

func (s *Sim) takeFailNext(action string) *apiError {
	for _, key := range []string{action, "*"} {
		rule := s.failNext[key]
		if rule == nil {
			continue
		}
		rule.times--
		if rule.times <= 0 {
			delete(s.failNext, key)
		}
		if rule.code == "UnauthorizedOperation" {
			return s.unauthorized(action)
		}
		return injectedError(rule.code, action)
	}
	return nil
}

// SetSubnetFree shrinks (or grows back) the subnet's free addresses to n, as
// if other tenants took them: the lowest n free addresses stay free.
func (s *Sim) SetSubnetFree(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subnet.setFree(max(n, 0))
}

// FragmentSubnet blocks one address in every free /28, so single addresses can
// still be assigned but prefix delegation fails with InsufficientCidrBlocks.
func (s *Sim) FragmentSubnet() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subnet.fragment()
}

// DenyAction answers every later call of action with UnauthorizedOperation.
func (s *Sim) DenyAction(action string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.denied[action] = true
}

// AllowAction undoes DenyAction.
func (s *Sim) AllowAction(action string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.denied, action)
}

// unauthorized mimics EC2's IAM denial: the plain message names the principal
// and the ec2:Action; the encoded part decodes to JSON naming it too.
func (s *Sim) unauthorized(action string) *apiError {
	principal := fmt.Sprintf("arn:aws:sts::%s:assumed-role/ec2sim-node-role/%s", s.ownerID, s.cfg.InstanceID)
	decoded := fmt.Sprintf(`{"allowed":false,"explicitDeny":false,"matchedStatements":{"items":[]},`+
		`"failures":{"items":[]},"context":{"principal":{"arn":%q},"action":"ec2:%s",`+
		`"resource":"arn:aws:ec2:%s:%s:*","conditions":{"items":[]}}}`,
		principal, action, s.cfg.Region, s.ownerID)
	return newAPIError("UnauthorizedOperation",
		"You are not authorized to perform this operation. User: %s is not authorized to perform: ec2:%s "+
			"because no identity-based policy allows the ec2:%s action. Encoded authorization failure message: %s",
		principal, action, action, base64.RawURLEncoding.EncodeToString([]byte(decoded)))
}
