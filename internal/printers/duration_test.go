package printers

import (
	"encoding/json"
	"testing"
	"time"
)

// The output prints durations as strings and reads back what it printed.
func TestDurationRoundTripsAsAString(t *testing.T) {
	raw, err := json.Marshal(struct {
		D Duration `json:"d"`
	}{Duration(1500 * time.Millisecond)})
	if err != nil || string(raw) != `{"d":"1.5s"}` {
		t.Fatalf("marshal: %s, %v", raw, err)
	}
	var back struct {
		D Duration `json:"d"`
	}
	if err := json.Unmarshal(raw, &back); err != nil || back.D.Std() != 1500*time.Millisecond {
		t.Fatalf("unmarshal: %v, %v", back.D, err)
	}
	if err := json.Unmarshal([]byte(`{"d":1500}`), &back); err == nil {
		t.Fatal("a number is not this output's duration, want an error")
	}
}
