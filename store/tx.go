package store

import (
	"bytes"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Tx is one bbolt transaction with the store's verbs. It is valid only
// inside the View or Update callback that received it.
type Tx struct {
	tx   *bolt.Tx
	path string
}

func (t *Tx) bucket(name []byte) *bolt.Bucket {
	b := t.tx.Bucket(name)
	if b == nil {
		// Unreachable: every transaction starts with checkBuckets.
		panic(fmt.Sprintf("store %s: bucket %q missing", t.path, name))
	}
	return b
}

// getJSON decodes the value at key into v; found is false when there is none.
func (t *Tx) getJSON(bucket, key []byte, v any) (found bool, err error) {
	raw := t.bucket(bucket).Get(key)
	if raw == nil {
		return false, nil
	}
	if err := unmarshal(raw, v); err != nil {
		return true, fmt.Errorf("%s: %s/%s: %w", t.path, bucket, key, err)
	}
	return true, nil
}

// unmarshal is json.Unmarshal, but a record with its own decoder
// (recordjson.go), which checks the syntax as it reads, gets the bytes
// without encoding/json's pass over them first.
func unmarshal(raw []byte, v any) error {
	if u, ok := v.(json.Unmarshaler); ok {
		return u.UnmarshalJSON(raw)
	}
	return json.Unmarshal(raw, v)
}

func (t *Tx) putJSON(bucket, key []byte, v any) error {
	raw, err := marshal(v)
	if err != nil {
		return err
	}
	return t.bucket(bucket).Put(key, raw)
}

func jsonValue(raw []byte, v any) error { return json.Unmarshal(raw, v) }

// marshal is json.Marshal, but a record with its own encoder (recordjson.go)
// is not parsed again to check and compact what that encoder wrote: its
// tests hold it to json.Marshal's bytes.
func marshal(v any) ([]byte, error) {
	if m, ok := v.(json.Marshaler); ok {
		return m.MarshalJSON()
	}
	return json.Marshal(v)
}

// leadingField decodes the field name of the JSON object raw into v, reading
// no further than its value when the object begins with it (as a record
// written from a struct whose first field it is), else decoding the whole
// object. Records carry the last pass's values (several KB); a pod start
// needs one small field of them.
func leadingField(raw []byte, name string, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fieldOf(raw, name, v)
	}
	if key, err := dec.Token(); err != nil || key != name {
		return fieldOf(raw, name, v)
	}
	return dec.Decode(v)
}

// fieldOf decodes the field name of the JSON object raw into v.
func fieldOf(raw []byte, name string, v any) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return err
	}
	if f, ok := fields[name]; ok {
		return json.Unmarshal(f, v)
	}
	return nil
}
