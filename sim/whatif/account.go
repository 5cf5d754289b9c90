package whatif

import (
	"strings"
	"time"
)

// Account is one AWS account's EC2 token buckets in one Region, on the
// virtual clock: per action, Max tokens refilled at Rate per second
// (ec2-wire.md §6.6, "Request throttling for the Amazon EC2 API").
type Account struct {
	buckets map[string]*bucket
	// Throttled counts the calls refused, by action.
	Throttled map[string]int
	// Calls counts every call asked, by action.
	Calls map[string]int
}

type bucket struct {
	max, rate, tokens float64
	at                time.Time
}

// bucketFor names the bucket an action takes its token from, with its size
// and refill rate. The filtered DescribeNetworkInterfaces a pass makes is a
// non-mutating call (the 100/20 bucket).
func bucketFor(action string) (name string, max, rate float64) {
	switch action {
	case "AttachNetworkInterface", "DetachNetworkInterface":
		return "attach-detach", 50, 5
	case "CreateNetworkInterface", "DeleteNetworkInterface", "AssignPrivateIpAddresses",
		"UnassignPrivateIpAddresses", "ModifyNetworkInterfaceAttribute":
		return action, 100, 5
	case "CreateTags", "DeleteTags":
		return "tags", 100, 10
	}
	if strings.HasPrefix(action, "IMDS") {
		return "", 0, 0 // per instance, outside the account's budget
	}
	return "non-mutating", 100, 20
}

// NewAccount returns an account whose buckets are all full.
func NewAccount() *Account {
	return &Account{buckets: map[string]*bucket{}, Throttled: map[string]int{}, Calls: map[string]int{}}
}

// Take spends one token for action at now; false means RequestLimitExceeded.
func (a *Account) Take(action string, now time.Time) bool {
	name, max, rate := bucketFor(action)
	a.Calls[action]++
	if name == "" {
		return true
	}
	b := a.buckets[name]
	if b == nil {
		b = &bucket{max: max, rate: rate, tokens: max, at: now}
		a.buckets[name] = b
	}
	if now.After(b.at) {
		b.tokens = min(b.max, b.tokens+now.Sub(b.at).Seconds()*b.rate)
		b.at = now
	}
	if b.tokens < 1 {
		a.Throttled[action]++
		return false
	}
	b.tokens--
	return true
}

// Mutating reports whether an action changes something in EC2.
func Mutating(action string) bool {
	return !strings.HasPrefix(action, "Describe") && !strings.HasPrefix(action, "IMDS")
}
