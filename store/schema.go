package store

import (
	"bytes"
	"fmt"
	"strconv"

	bolt "go.etcd.io/bbolt"
)

// SchemaVersion is the layout this binary reads and writes.
const SchemaVersion = 3

// magic marks a bbolt file as a vpc-cni state database.
var magic = []byte("vpc-cni node state")

var (
	bMeta        = []byte("meta")        // magic, schema, node identity
	bSettings    = []byte("settings")    // overrides and effective config
	bState       = []byte("state")       // pool meta, last reconcile report
	bENIs        = []byte("enis")        // ENI ID -> eniRecord (JSON)
	bBlocks      = []byte("blocks")      // ENI ID, 0, prefix key -> block value
	bAddrs       = []byte("addrs")       // address key -> addrRecord (binary)
	bAvail       = []byte("avail")       // device index, address key -> state, since: the Take index
	bAssignments = []byte("assignments") // "<containerID>/<ifName>" -> Assignment (JSON)
	bIntents     = []byte("intents")     // ClientToken -> Intent (JSON)
	bCounters    = []byte("counters")    // name -> int64
	bEvents      = []byte("events")      // sequence -> Event (JSON)
	bBudget      = []byte("budget")      // bucket name -> token bucket

	kMagic  = []byte("magic")
	kSchema = []byte("schema")
)

// v1Buckets are the buckets every version 1 file has.
var v1Buckets = [][]byte{bMeta, bSettings, bState, bENIs, bBlocks, bAddrs, bAvail,
	bAssignments, bIntents, bCounters, bEvents, bBudget}

// migrations[n] turns a version n database into version n+1, inside the
// caller's transaction. The array length keeps the table complete.
var migrations = [SchemaVersion]func(*bolt.Tx) error{
	0: migrateV0toV1,
	1: migrateV1toV2,
	2: migrateV2toV3,
}

// migrateV2toV3: version 3 ENI records may serve a network profile
// (eniRecord.Profile), whose addresses only that profile's pods may have,
// and assignments and waiters may name a profile. A version 2 file has no
// profile ENI, so nothing is rewritten; the version keeps an older binary,
// which would give a profile's addresses to any pod, from opening the file.
func migrateV2toV3(*bolt.Tx) error { return nil }

// migrateV1toV2: version 2 ENI records carry the ENI's class (ours, adopted,
// not ours), its reason, its network card and the EC2 facts behind them.
// A version 1 record reads as card 0, class unknown, facts not known: the
// behaviour of version 1 (every attached ENI used) until the next pass,
// which reads EC2 because of the unknown facts and classifies it before it
// plans. So nothing is rewritten; the version says an older binary, which
// would use a not-ours ENI, must not open the file.
func migrateV1toV2(*bolt.Tx) error { return nil }

// migrateV0toV1 turns an empty bolt file (or a meta bucket with only the
// magic) into the first layout.
func migrateV0toV1(tx *bolt.Tx) error {
	meta, err := tx.CreateBucketIfNotExists(bMeta)
	if err != nil {
		return err
	}
	if err := meta.Put(kMagic, magic); err != nil {
		return err
	}
	for _, name := range v1Buckets {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	return nil
}

// schemaVersion identifies the file: 0 for an empty bolt file, the stored
// version for a vpc-cni one, and ErrNotVPCCNI or ErrNewerSchema otherwise.
// It only reads.
func schemaVersion(tx *bolt.Tx, path string) (int, error) {
	meta := tx.Bucket(bMeta)
	if meta == nil {
		k, _ := tx.Cursor().First() // the first top-level bucket
		if k == nil {
			return 0, nil
		}
		return 0, fmt.Errorf("%s: %w (no %q bucket); the file was left unchanged", path, ErrNotVPCCNI, bMeta)
	}
	if !bytes.Equal(meta.Get(kMagic), magic) {
		return 0, fmt.Errorf("%s: %w (no vpc-cni marker in %q); the file was left unchanged", path, ErrNotVPCCNI, bMeta)
	}
	raw := meta.Get(kSchema)
	if raw == nil {
		return 0, nil
	}
	v, err := strconv.Atoi(string(raw))
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%s: %w (schema version %q)", path, ErrNotVPCCNI, raw)
	}
	if v == SchemaVersion {
		return v, checkBuckets(tx, path)
	}
	if v > SchemaVersion {
		return v, fmt.Errorf("%s: %w (file schema %d, this binary knows up to %d); upgrade vpc-cni, the file was left unchanged",
			path, ErrNewerSchema, v, SchemaVersion)
	}
	return v, nil
}

// prepareWrite validates the file before any write, then migrates it to
// SchemaVersion.
func prepareWrite(tx *bolt.Tx, path string) error {
	v, err := schemaVersion(tx, path)
	if err != nil || v == SchemaVersion {
		return err
	}
	for ; v < SchemaVersion; v++ {
		if err := migrations[v](tx); err != nil {
			return fmt.Errorf("%s: migrating schema %d to %d: %w", path, v, v+1, err)
		}
	}
	return tx.Bucket(bMeta).Put(kSchema, []byte(strconv.Itoa(SchemaVersion)))
}

// checkReadable accepts only a file of the current schema for reading.
func checkReadable(tx *bolt.Tx, path string) error {
	v, err := schemaVersion(tx, path)
	switch {
	case err != nil:
		return err
	case v == 0:
		return fmt.Errorf("%s: %w", path, ErrNotInitialized)
	case v < SchemaVersion:
		return fmt.Errorf("%s: schema %d, this binary uses %d: %w", path, v, SchemaVersion, ErrOlderSchema)
	}
	return nil
}

// checkBuckets makes a damaged file an error instead of a panic later.
func checkBuckets(tx *bolt.Tx, path string) error {
	for _, name := range v1Buckets {
		if tx.Bucket(name) == nil {
			return fmt.Errorf("%s: bucket %q missing: %w", path, name, ErrInconsistent)
		}
	}
	return nil
}
