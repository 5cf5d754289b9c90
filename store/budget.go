package store

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// TakeToken draws one token from the named token bucket (rate tokens per
// second, at most burst banked), which lives in the file so that every
// process on the node shares one EC2 budget. It returns 0 when it took a
// token, or else how long until one is available (and takes nothing).
func (t *Tx) TakeToken(bucket string, now time.Time, rate, burst float64) (time.Duration, error) {
	if bucket == "" || !(rate > 0) || !(burst >= 1) || math.IsInf(rate, 0) || math.IsInf(burst, 0) {
		return 0, fmt.Errorf("token bucket %q rate %v burst %v: %w", bucket, rate, burst, ErrInvalid)
	}
	b := t.bucket(bBudget)
	tokens, last := burst, now
	if v := b.Get([]byte(bucket)); len(v) == 16 {
		tokens = math.Float64frombits(binary.BigEndian.Uint64(v))
		last = readTime(v[8:])
		if elapsed := now.Sub(last); elapsed > 0 {
			tokens = min(burst, tokens+elapsed.Seconds()*rate)
			last = now
		}
	}
	tokens = min(tokens, burst)
	var wait time.Duration
	if tokens >= 1 {
		tokens--
	} else {
		wait = time.Duration(math.Ceil((1 - tokens) / rate * float64(time.Second)))
	}
	v := binary.BigEndian.AppendUint64(nil, math.Float64bits(tokens))
	return wait, b.Put([]byte(bucket), appendTime(v, last))
}
