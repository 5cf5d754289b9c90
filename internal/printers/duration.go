package printers

import (
	"encoding/json"
	"time"
)

// Duration is the one duration type of the CLI's output: it prints as "30s"
// in JSON and YAML, never as nanoseconds, and reads back what it prints, so
// scripts (and tests) decode the output with the same types. Input
// durations (the plugin's configuration) have their own rules and type.
type Duration time.Duration

// MarshalJSON writes time.Duration's String form.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads what MarshalJSON writes.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

// Std is the time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }
