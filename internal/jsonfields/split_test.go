package jsonfields

import (
	"encoding/json"
	"reflect"
	"testing"
)

// eachField accepts what encoding/json accepts as one object (or null) and
// finds the same keys and values.
func FuzzEachFieldAsEncodingJSON(f *testing.F) {
	for _, seed := range []string{`{}`, ` null `, `{"a":1,"b":[true,false,null,{"c":"d\u00e9\n"}],"e":-0.5e+3}`,
		`{"a":1,}`, `{"a" 1}`, `{"a":01}`, `{"a":"x\q"}`, `{"a":tru}`, `[1]`, `{"a":{}} x`, `{"a":"` + "\x01" + `"}`,
		`{"k":"v","k":2}`, `{"a":[1,]}`, `{"a":1e}`, `{"a":-}`, `{"\ud800":1}`, "{\"a\":\"\xff\"}"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var std map[string]any
		stdErr := json.Unmarshal(data, &std)
		got := map[string]any{}
		err := eachField(data, func(key string, raw []byte) error {
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatalf("%q: value %q of key %q passed the syntax check but does not decode: %v", data, raw, key, err)
			}
			got[key] = v
			return nil
		})
		if (err == nil) != (stdErr == nil) {
			t.Fatalf("%q: eachField says %v, json.Unmarshal %v", data, err, stdErr)
		}
		if err == nil && std != nil && !reflect.DeepEqual(got, std) {
			t.Fatalf("%q: eachField found %v, json.Unmarshal %v", data, got, std)
		}
	})
}
