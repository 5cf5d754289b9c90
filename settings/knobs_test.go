package settings

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var genericKinds = []Kind{KindInt, KindBool, KindDuration, KindEnum, KindRate}

// Every row says all a knob needs: a kind, a doc line, an example and a
// default that its own kind accepts, and a field only of a generic kind.
func TestEveryRegistryRowIsWhole(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Registry {
		if seen[k.Name] {
			t.Errorf("%s: two rows", k.Name)
		}
		seen[k.Name] = true
		if k.Doc == "" || k.Example == "" || k.TypeText() == "" {
			t.Errorf("%s: no doc line, example or type: %+v", k.Name, k)
		}
		if k.Default != "" && k.why(k.Default) != "" || k.why(k.Example) != "" {
			t.Errorf("%s: default %q or example %q refused: %s%s", k.Name, k.Default, k.Example, k.why(k.Default), k.why(k.Example))
		}
		switch {
		case k.Kind == KindInt && (k.Max <= k.Min):
			t.Errorf("%s: range %d..%d", k.Name, k.Min, k.Max)
		case k.Kind == KindEnum && len(k.Allowed) < 2:
			t.Errorf("%s: allowed %v", k.Name, k.Allowed)
		case k.field != nil && !slices.Contains(genericKinds, k.Kind):
			t.Errorf("%s: a field, but kind %s has no generic parser", k.Name, k.Kind)
		case k.Scope == PerProfile && k.field == nil:
			t.Errorf("%s: per profile, but no field for the profile's pool", k.Name)
		case k.Fate != "" && !k.NodeKey():
			t.Errorf("%s: aws-node's, but no key of the file", k.Name)
		case k.DefaultFrom != "" && !seen[k.DefaultFrom]:
			t.Errorf("%s: its default comes from %s, not a knob before it", k.Name, k.DefaultFrom)
		}
	}
}

// Unset, every knob resolves to the registry's default: the row is the
// default the code applies, not a copy of it.
func TestResolvedDefaultsAreTheRegistrys(t *testing.T) {
	e, err := Resolve(Overrides{}, Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range Registry {
		if !k.NodeKey() {
			continue
		}
		v := e.Value(k.Name)
		want := k.Default
		switch {
		case k.DefaultFrom != "":
			want = e.Value(k.DefaultFrom).Value
		case k.Kind == KindInt && want == "":
			want = "0"
		case k.Kind == KindDuration && k.Name != ReleaseDelay:
			want = k.durationDefault().String()
		case k.Name == ReleaseDelay:
			want = max(k.durationDefault(), e.Pool.Cooldown+time.Minute).String()
		}
		if v.Name != k.Name || v.Source != FromDefault || v.Value != want {
			t.Errorf("%s unset: %+v, the registry's default %q", k.Name, v, want)
		}
	}
}

// `pool status` lists what Resolve gives: every knob of the file once, and
// every field of each profile.
func TestValuesListEveryRegistryKnob(t *testing.T) {
	e, err := Resolve(Overrides{}, Inputs{File: fileOf(t, "PROFILE_GOLD_SNAT=none\n")})
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, v := range e.Values {
		got = append(got, v.Name)
	}
	for _, k := range Registry {
		if k.NodeKey() {
			want = append(want, k.Name)
		}
		if k.ProfileKey() {
			want = append(want, ProfileKey("gold", k.Name))
		}
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("values %v\nregistry %v", got, want)
	}
}

// badValue is a value the kind refuses, and the words of the refusal.
func badValue(k Knob) (text, why string) {
	switch k.Kind {
	case KindInt:
		return strconv.Itoa(k.Max + 1), fmt.Sprintf("out of range, must be %d..%d", k.Min, k.Max)
	case KindBool:
		return "maybe", "not a boolean (true or false)"
	case KindDuration:
		return "-5", "must not be negative"
	case KindEnum:
		return "bogus", "must be " + orList(k.Allowed)
	case KindRate:
		return "0", fmt.Sprintf("calls per second in (0, %d]", k.Max)
	}
	return "", ""
}

// A knob of a generic kind is checked from its row alone, wherever its
// value is read: a bad one, in the file or the environment, is an error
// naming the key, where it was set and what the row allows.
func TestEveryGenericKnobRefusesABadValueNamingIt(t *testing.T) {
	for _, k := range Registry {
		text, why := badValue(k)
		if text == "" {
			continue
		}
		var keys []string
		if k.NodeKey() {
			keys = append(keys, k.Name)
		}
		if k.ProfileKey() {
			keys = append(keys, ProfileKey("gold", k.Name))
		}
		for _, key := range keys {
			_, err := Resolve(Overrides{}, Inputs{File: fileOf(t, "\n"+key+"="+text+"\n")})
			want := fmt.Sprintf("%s=%q (file /etc/vpc-cni/config:2)", key, text)
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), why) {
				t.Errorf("%s=%s in the file: err = %v, want %s ...%s", key, text, err, want, why)
			}
			env := map[string]string{key: text}
			_, err = Resolve(Overrides{}, Inputs{Env: envOf(env), Names: func() []string { return []string{key} }})
			if want := fmt.Sprintf("%s=%q (env)", key, text); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s=%s in the environment: err = %v, want %s", key, text, err, want)
			}
		}
	}
}

// A profile that sets any of its targets gets exactly those, the others at
// their defaults; one that sets none keeps the node's. Checked for every
// per-profile knob of the registry, not a list kept beside it.
func TestAProfileThatSetsAnyTargetGetsTheOthersAtTheirDefaults(t *testing.T) {
	node := ""
	for _, k := range Registry {
		if k.Scope == PerProfile {
			node += k.Name + "=3\n"
		}
	}
	for _, k := range Registry {
		if k.Scope != PerProfile {
			continue
		}
		in := Inputs{File: fileOf(t, node+ProfileKey("gold", k.Name)+"=2\nPROFILE_BLUE_SNAT=none\n")}
		e, err := Resolve(Overrides{}, in)
		if err != nil {
			t.Fatal(err)
		}
		gold, _ := e.Profile("gold")
		blue, _ := e.Profile("blue")
		g, b := Effective{Pool: gold.Pool}, Effective{Pool: blue.Pool}
		for _, o := range Registry {
			if o.Scope != PerProfile {
				continue
			}
			want := o.intDefault()
			if o.Name == k.Name {
				want = 2
			}
			if got := *o.field(&g).(*int); got != want {
				t.Errorf("gold sets %s: its %s is %d, want %d", k.Name, o.Name, got, want)
			}
			if got := *o.field(&b).(*int); got != 3 {
				t.Errorf("blue sets no target: its %s is %d, want the node's 3", o.Name, got)
			}
		}
	}
}
