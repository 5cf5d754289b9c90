package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Duration is a JSON duration: "30s" or a number of seconds.
type Duration struct{ time.Duration }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil || v <= 0 {
			return fmt.Errorf("duration %q: want a positive duration like \"30s\"", s)
		}
		d.Duration = v
		return nil
	}
	var n float64
	if err := json.Unmarshal(b, &n); err != nil || n <= 0 {
		return fmt.Errorf("duration %s: want a positive duration like \"30s\" or seconds", b)
	}
	d.Duration = time.Duration(n * float64(time.Second))
	return nil
}

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

func (d *Duration) orDefault(v time.Duration) {
	if d.Duration == 0 {
		d.Duration = v
	}
}

func asTypeError(err error, te **json.UnmarshalTypeError) bool {
	return err != nil && errors.As(err, te)
}
