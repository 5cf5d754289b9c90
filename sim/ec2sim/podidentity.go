package ec2sim

import (
	"encoding/json"
	"net/http"
	"time"
)

// PodIdentityPath is where the EKS Pod Identity agent serves credentials
// (http://169.254.170.23/v1/credentials on a node).
const PodIdentityPath = "/v1/credentials"

// servePodIdentity answers GET /v1/credentials as the agent does: the
// Authorization header is the projected token; errors are plain text.
func (s *Sim) servePodIdentity(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counters["PodIdentity:GetCredentials"]++
	tok := r.Header.Get("Authorization")
	if tok == "" {
		http.Error(w, "Service account token cannot be empty", http.StatusBadRequest)
		return
	}
	t := s.trustLocked()
	if _, err := checkToken(tok, t.PodIdentityAudience, t.Subject, s.now()); err != nil {
		http.Error(w, "Invalid token: "+err.Error(), http.StatusBadRequest)
		return
	}
	c := s.issue(t.Duration)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"AccessKeyId": c.AccessKeyID,
		"SecretAccessKey": c.SecretAccessKey, "Token": c.SessionToken, "AccountId": s.ownerID,
		"Expiration": c.Expiration.Format(time.RFC3339Nano)})
}
