package ec2sim

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

func TestCheckToken(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	enc := base64.RawURLEncoding.EncodeToString
	hs256 := enc([]byte(`{"alg":"HS256"}`)) + "." + enc([]byte(`{"aud":"sts.amazonaws.com","sub":"s","exp":1767229300}`)) + ".c2ln"
	for _, tc := range []struct {
		name, tok, want string
	}{
		{"valid, audience a list", MintToken("sts.amazonaws.com", "s", now.Add(time.Minute)), ""},
		{"valid, audience a string, signed", hs256, ""},
		{"expired", MintToken("sts.amazonaws.com", "s", now), "token expired"},
		{"wrong audience", MintToken("other", "s", now.Add(time.Minute)), "incorrect token audience"},
		{"wrong subject", MintToken("sts.amazonaws.com", "x", now.Add(time.Minute)), "subject"},
		{"not a JWT", "abc", "not a JWT"},
	} {
		_, err := checkToken(tc.tok, "sts.amazonaws.com", "s", now)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
