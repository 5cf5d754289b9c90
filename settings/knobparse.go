package settings

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The registry's generic kinds, parsed and checked from the row alone.

// intDefault is a KindInt knob's default as a number (0 when unset).
func (k Knob) intDefault() int {
	n, _ := strconv.Atoi(k.Default)
	return n
}

// durationDefault is a KindDuration knob's default.
func (k Knob) durationDefault() time.Duration {
	d, err := parseSeconds(k.Default)
	if err != nil && k.Default != "" {
		panic("settings: bad default of " + k.Name)
	}
	return d
}

// generic resolves every knob with a field, in the registry's order.
func (r *resolver) generic(e *Effective) error {
	for _, k := range Registry {
		if k.field == nil {
			continue
		}
		if err := r.resolveInto(k, k.Name, k.field(e)); err != nil {
			return err
		}
	}
	return nil
}

// resolveInto parses the knob's value under key (its name, or a profile's
// key) into dst by the knob's kind.
func (r *resolver) resolveInto(k Knob, key string, dst any) (err error) {
	switch d := dst.(type) {
	case *int:
		*d, err = r.integer(key, k.intDefault(), k.Min, k.Max)
	case *bool:
		*d, err = r.boolean(key, k.Default == "true")
	case *time.Duration:
		*d, err = r.seconds(key, k.durationDefault())
	default:
		panic(fmt.Sprintf("settings: %s: field of type %T", k.Name, dst))
	}
	return err
}

// setDefault writes the knob's default into dst (as resolveInto does for
// an unset knob, without noting it).
func (k Knob) setDefault(dst any) {
	switch d := dst.(type) {
	case *int:
		*d = k.intDefault()
	case *bool:
		*d = k.Default == "true"
	case *time.Duration:
		*d = k.durationDefault()
	}
}

// shown records every node-wide knob no resolver noted (the ones read where
// they act: the EC2 budget by the cloud client, the node rules by hostnet),
// as given or at the row's default, after checking it by its kind.
func (r *resolver) shown() error {
	noted := make(map[string]bool, len(r.values))
	for _, v := range r.values {
		noted[v.Name] = true
	}
	for _, k := range Registry {
		if !k.NodeKey() || noted[k.Name] {
			continue
		}
		text, v, ok := r.in.Lookup(k.Name)
		if !ok {
			text = k.Default
		} else if why := k.why(text); why != "" {
			return bad(v, text, why)
		}
		r.note(v, strings.TrimSpace(text))
	}
	return nil
}

// why says what is wrong with text as the knob's value by its kind ("" when
// nothing is, or when the kind has a parser of its own).
func (k Knob) why(text string) string {
	switch k.Kind {
	case KindInt:
		_, why := intIn(text, k.Min, k.Max)
		return why
	case KindBool:
		if _, err := strconv.ParseBool(text); err != nil {
			return "not a boolean (true or false)"
		}
	case KindDuration:
		if _, err := parseSeconds(text); err != nil {
			return err.Error()
		}
	case KindEnum:
		if !slices.Contains(k.Allowed, text) {
			return "must be " + orList(k.Allowed)
		}
	case KindRate:
		if n, err := strconv.ParseFloat(text, 64); err != nil || n <= 0 || n > float64(k.Max) {
			return fmt.Sprintf("must be a number of calls per second in (0, %d]", k.Max)
		}
	}
	return ""
}

// checked looks a knob up (environment, else file) and checks it by its
// kind: for the readers outside Resolve (node rules, EC2 budget).
func checked(in Inputs, name string) (text string, ok bool, err error) {
	text, v, ok := in.Lookup(name)
	if !ok {
		return knob(name).Default, false, nil
	}
	if why := knob(name).why(text); why != "" {
		return "", false, bad(v, text, why)
	}
	return text, true, nil
}

// shortDuration writes d as the docs do: 3m, not 3m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
