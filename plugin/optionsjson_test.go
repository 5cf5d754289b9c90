package plugin

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// plainOptions has Options' fields and tags without its decoder.
type plainOptions Options

// The plugin's keys decode as encoding/json decodes them: a key added to
// Options and not to its fields fails here, since every field is set.
func TestOptionsDecodeAsEncodingJSONDoes(t *testing.T) {
	var o Options
	v := reflect.ValueOf(&o).Elem()
	for i := range v.NumField() {
		switch f := v.Field(i).Addr().Interface().(type) {
		case *string:
			*f = v.Type().Field(i).Name + "<&>"
		case *int:
			*f = 9000 + i
		case **bool:
			b := i%2 == 0
			*f = &b
		case *Timeouts:
			*f = Timeouts{Add: Duration{3 * time.Second}, Del: Duration{time.Minute}, Check: Duration{2 * time.Second}, Status: Duration{time.Second}}
		default:
			t.Fatalf("field %s of type %s: add a value for it", v.Type().Field(i).Name, v.Field(i).Type())
		}
	}
	raw, err := json.Marshal(plainOptions(o))
	if err != nil {
		t.Fatal(err)
	}
	var got Options
	var want plainOptions
	if err := strictDecode(raw, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, Options(want)) || !reflect.DeepEqual(got, o) {
		t.Errorf("decoded %s\n got %+v\nwant %+v", raw, got, want)
	}
}
