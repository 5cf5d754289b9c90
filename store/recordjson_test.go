package store

import (
	"encoding/json"
	"errors"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"vpc-cni/internal/jsonfields"
	"vpc-cni/pool"
	"vpc-cni/settings"
)

// The records' own codecs against encoding/json's reflection over the
// same struct tags (the plain types below have the fields, not the
// methods): a field added to Node or Assignment and not to its codec
// fails here, since fill sets every field.
type (
	plainNode       Node
	plainAssignment Assignment
)

// fill sets every field of the struct v points to a value that is not
// its zero (strings distinct per field, with characters encoding/json
// escapes); a field of a kind it does not know fails the test.
func fill(t *testing.T, v any) {
	t.Helper()
	s := reflect.ValueOf(v).Elem()
	for i := range s.NumField() {
		f, name := s.Field(i), s.Type().Field(i).Name
		switch x := f.Addr().Interface().(type) {
		case *netip.Addr:
			*x = netip.AddrFrom4([4]byte{100, 64, 1, byte(i)})
		case *netip.Prefix:
			*x = netip.PrefixFrom(netip.AddrFrom4([4]byte{100, 64, byte(i), 0}), 24)
		case *[]netip.Prefix:
			*x = []netip.Prefix{netip.MustParsePrefix("100.64.0.0/16"), netip.MustParsePrefix("100.65.0.0/16")}
		case *time.Time:
			*x = time.Date(2026, 12, 7, 5, i, 7, 123456789, time.FixedZone("X", 3600))
		case *pool.Limits:
			*x = pool.Limits{MaxENIs: 8, IPv4PerENI: 30, VCPUs: 16}
		case *[]string:
			*x = []string{"sg-1", name}
		case *string:
			*x = name + "<&>é\"" + string(rune('a'+i))
		case *pool.Pool:
			*x = pool.Pool("gold<" + name + ">")
		case *int:
			*x = 10 + i
		case **int:
			n := 20 + i
			*x = &n
		case *bool:
			*x = true
		default:
			t.Fatalf("fill: field %s of type %s: add a value for it", name, f.Type())
		}
	}
}

func TestNodeRecordDecodesAsEncodingJSONDoes(t *testing.T) {
	var want Node
	fill(t, &want)
	for _, n := range []Node{want, {}, {InstanceID: "i-1", Limits: pool.Limits{MaxENIs: 3}}} {
		raw, err := json.Marshal(n)
		if err != nil {
			t.Fatal(err)
		}
		var got Node
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		var plain plainNode
		if err := json.Unmarshal(raw, &plain); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, Node(plain)) {
			t.Errorf("decoded %s\n got %+v\nwant %+v", raw, got, plain)
		}
	}
}

func TestAssignmentRecordEncodesAndDecodesAsEncodingJSONDoes(t *testing.T) {
	var full Assignment
	fill(t, &full)
	for _, a := range []Assignment{full, {}, {Key: "c/eth0", IP: netip.MustParseAddr("100.64.0.9"), Time: time.Unix(5, 0).UTC()}} {
		got, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(plainAssignment(a))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("encoded\n got %s\nwant %s", got, want)
		}
		var back Assignment
		if err := json.Unmarshal(want, &back); err != nil {
			t.Fatal(err)
		}
		var plain plainAssignment
		if err := json.Unmarshal(want, &plain); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, Assignment(plain)) {
			t.Errorf("decoded %s\n got %+v\nwant %+v", want, back, plain)
		}
	}
}

func TestRecordDecodeErrorsNameTheKey(t *testing.T) {
	var n Node
	err := json.Unmarshal([]byte(`{"instanceId":"i-1","limits":{"MaxENIs":"x"}}`), &n)
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Field != "limits.MaxENIs" {
		t.Fatalf("error %v; want a type error at limits.MaxENIs", err)
	}
	if err := json.Unmarshal([]byte(`{"primaryIp":"not an address"}`), &n); err == nil {
		t.Fatal("a bad address decoded")
	}
}

func TestOverridesDecodeAsEncodingJSONDoes(t *testing.T) {
	var want settings.Overrides
	fill(t, &want)
	for _, o := range []settings.Overrides{want, {}} {
		raw, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		var got, std settings.Overrides
		if err := jsonfields.Decode(raw, overridesFields(&got)); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &std); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, std) {
			t.Errorf("decoded %s\n got %+v\nwant %+v", raw, got, std)
		}
	}
}

// A damaged record is an error, whichever decoder reads it.
func TestDamagedRecordsDoNotDecode(t *testing.T) {
	for _, raw := range []string{`{"instanceId":"i-1"`, `{"instanceId":"i-1",}`, `{"instanceId":i-1}`, "{\"instanceId\":\"i\x01\"}", `[]`, ``} {
		var n Node
		if err := unmarshal([]byte(raw), &n); err == nil {
			t.Errorf("node record %q decoded: %+v", raw, n)
		}
		var a Assignment
		if err := unmarshal([]byte(raw), &a); err == nil {
			t.Errorf("assignment record %q decoded: %+v", raw, a)
		}
	}
}
