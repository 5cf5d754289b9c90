package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"vpc-cni/cloud"
)

// everyFailure is one error of every shape a failed pass can end with.
func everyFailure() []error {
	errs := []error{IdentityError{"x"}, ConfigError{errors.New("x")}, context.DeadlineExceeded,
		context.Canceled, errors.New("x"), fmt.Errorf("wrapped: %w", IdentityError{"x"}), fmt.Errorf("%w x", ErrLockHeld)}
	for k := cloud.Kind(0); !strings.HasPrefix(k.String(), "kind("); k++ {
		errs = append(errs, fmt.Errorf("a step: %w", &cloud.Error{Op: "ec2:X", Kind: k}))
	}
	return errs
}

func TestCausesCoverEveryCause(t *testing.T) {
	produced := map[string]bool{}
	for _, err := range everyFailure() {
		name := Cause(err)
		produced[name] = true
		if _, ok := CauseOf(name); !ok {
			t.Errorf("Cause(%v) = %q, which the table of causes lacks", err, name)
		}
	}
	seen := map[string]bool{}
	for _, c := range Causes() {
		if seen[c.Name] {
			t.Errorf("cause %q is in the table twice", c.Name)
		}
		seen[c.Name] = true
		if !produced[c.Name] {
			t.Errorf("cause %q is in the table but no failure produces it", c.Name)
		}
		if c.Meaning == "" || c.Action == "" {
			t.Errorf("cause %q lacks a meaning or an action: %+v", c.Name, c)
		}
	}
}

func TestCauseOfUnknownNameIsOther(t *testing.T) {
	c, ok := CauseOf("from-a-newer-binary")
	if ok || c.Name != cloud.KindOther.String() {
		t.Errorf("CauseOf(unknown) = %+v, %v; want the %q entry and false", c, ok, cloud.KindOther)
	}
}

// The causes that make STATUS of an empty node fail are in the table, and
// a passing trouble is not among them.
func TestGrowthRefusalsAreCauses(t *testing.T) {
	for _, name := range growthRefusals {
		if _, ok := CauseOf(name); !ok {
			t.Errorf("growth refusal %q is not in the table of causes", name)
		}
	}
	for _, name := range []string{"throttled", "unreachable", "timeout", "other", ""} {
		if RefusesGrowth(name) {
			t.Errorf("RefusesGrowth(%q) = true; it passes by itself", name)
		}
	}
}
