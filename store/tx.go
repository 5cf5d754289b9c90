package store

import (
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
	if err := json.Unmarshal(raw, v); err != nil {
		return true, fmt.Errorf("%s: %s/%s: %w", t.path, bucket, key, err)
	}
	return true, nil
}

func (t *Tx) putJSON(bucket, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return t.bucket(bucket).Put(key, raw)
}

func jsonValue(raw []byte, v any) error { return json.Unmarshal(raw, v) }
