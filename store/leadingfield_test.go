package store

import (
	"encoding/json"
	"testing"

	"vpc-cni/settings"
)

// The ADD reads the overrides from the front of the settings record; a
// record written another way (another field first, no overrides, a later
// duplicate) must read as a whole decode reads it.
func TestLeadingFieldReadsAsAWholeDecode(t *testing.T) {
	for _, raw := range []string{
		`{"overrides":{"warmIpTarget":5},"effective":{},"lastPass":[{"name":"WARM_IP_TARGET"}]}`,
		`{"effective":{},"overrides":{"minimumIpTarget":3}}`,
		`{"effective":{}}`,
		`{}`,
		` { "overrides" : { "warmEniTarget" : 0 } }`,
		`{"overrides":null,"updatedAt":"2026-12-07T00:00:00Z"}`,
	} {
		var whole struct {
			Overrides settings.Overrides `json:"overrides"`
		}
		if err := json.Unmarshal([]byte(raw), &whole); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		var got settings.Overrides
		if err := leadingField([]byte(raw), "overrides", &got); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(whole.Overrides)
		if string(a) != string(b) {
			t.Errorf("%s: read %s, a whole decode reads %s", raw, a, b)
		}
	}
}

func TestLeadingFieldRefusesWhatIsNotAnObject(t *testing.T) {
	for _, raw := range []string{``, `[]`, `{"overrides":`, `{"overrides":{"warmIpTarget":"x"}}`, `nonsense`} {
		var got settings.Overrides
		if err := leadingField([]byte(raw), "overrides", &got); err == nil {
			t.Errorf("%q: no error", raw)
		}
	}
}
