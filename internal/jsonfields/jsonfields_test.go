package jsonfields

import (
	"encoding/json"
	"errors"
	"net/netip"
	"reflect"
	"testing"
	"time"
)

// Decode matches keys as encoding/json matches a struct's: exactly, else
// without regard to case; it skips unknown keys and leaves a value null
// leaves alone.
func TestDecodeMatchesKeysAsEncodingJSON(t *testing.T) {
	type want struct {
		Name string `json:"name"`
		MTU  int    `json:"mtu"`
		Keep string `json:"keep"`
	}
	for _, in := range []string{
		`{"name":"a","mtu":9001,"other":[1,{"x":2}],"keep":null}`,
		`{"NAME":"a","Mtu":9001}`,
	} {
		var std, got want
		std.Keep, got.Keep = "kept", "kept"
		if err := json.Unmarshal([]byte(in), &std); err != nil {
			t.Fatal(err)
		}
		err := Decode([]byte(in), map[string]any{"name": &got.Name, "mtu": &got.MTU, "keep": &got.Keep})
		if err != nil || got != std {
			t.Errorf("%s: got %+v, %v; encoding/json gives %+v", in, got, err, std)
		}
	}
}

func TestDecodeNamesTheKeyOfAWrongType(t *testing.T) {
	var n int
	var sub struct{ Add int }
	err := Decode([]byte(`{"mtu":"big"}`), map[string]any{"mtu": &n})
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Field != "mtu" || te.Value != "string" {
		t.Errorf("error %#v; want a type error at mtu", err)
	}
	err = Decode([]byte(`{"timeouts":{"Add":true}}`), map[string]any{"timeouts": &sub})
	if !errors.As(err, &te) || te.Field != "timeouts.Add" {
		t.Errorf("error %#v; want a type error at timeouts.Add", err)
	}
	if err := Decode([]byte(`[1]`), map[string]any{"mtu": &n}); err == nil {
		t.Error("an array decoded as an object")
	}
}

// Object writes what json.Marshal writes for the same struct.
func TestObjectWritesAsJSONMarshal(t *testing.T) {
	type rec struct {
		S   string     `json:"s"`
		E   string     `json:"e,omitempty"`
		N   int        `json:"n"`
		Z   int        `json:"z,omitempty"`
		IP  netip.Addr `json:"ip"`
		IP6 netip.Addr `json:"ip6,omitzero"`
		T   time.Time  `json:"t"`
	}
	r := rec{S: "<a&b>\"é\u2028", N: -3, IP: netip.MustParseAddr("100.64.0.1"), T: time.Unix(7, 9).UTC()}
	want, _ := json.Marshal(r)
	var o Object
	o.String("s", r.S, false)
	o.String("e", r.E, true)
	o.Int("n", r.N, false)
	o.Int("z", r.Z, true)
	if err := o.Text("ip", r.IP, false); err != nil {
		t.Fatal(err)
	}
	if err := o.Text("ip6", r.IP6, !r.IP6.IsValid()); err != nil {
		t.Fatal(err)
	}
	if err := o.Time("t", r.T); err != nil {
		t.Fatal(err)
	}
	if got := o.Bytes(); string(got) != string(want) {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	var empty Object
	if got := empty.Bytes(); string(got) != "{}" {
		t.Errorf("empty object %s", got)
	}
}

// Each value decodes to what json.Unmarshal gives, fast path or not.
func TestDecodeValueAsJSONUnmarshal(t *testing.T) {
	type vals struct {
		S  string
		N  int
		B  bool
		IP netip.Addr
		T  time.Time
		L  []string
	}
	cases := []string{`"plain"`, `"esc\"aped\n"`, `"\u00e9t\u00e9"`, "\"bad\xff\"", "\"tab\there\"", `"é<>&"`, `""`,
		`3`, `-7`, `1.5`, `1e3`, `true`, `false`, `null`, `"100.64.0.1"`, `"fd00::1"`, `"not an ip"`,
		`"2026-12-07T05:00:00.123Z"`, `["a","b"]`, `{}`, `[]`}
	for _, raw := range cases {
		for _, field := range []string{"S", "N", "B", "IP", "T", "L"} {
			var std, got vals
			std.S, got.S = "was", "was"
			stdErr := json.Unmarshal([]byte(`{"`+field+`":`+raw+`}`), &std)
			gotErr := Decode([]byte(`{"`+field+`":`+raw+`}`), map[string]any{"S": &got.S, "N": &got.N, "B": &got.B,
				"IP": &got.IP, "T": &got.T, "L": &got.L})
			if (stdErr == nil) != (gotErr == nil) || !reflect.DeepEqual(std, got) {
				t.Errorf("%s into %s: got %+v (%v); json.Unmarshal gives %+v (%v)", raw, field, got, gotErr, std, stdErr)
			}
		}
	}
}
