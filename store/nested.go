package store

import (
	"fmt"
	"sync"
)

// inTx records, per state file, the goroutines inside one of its
// transactions. A transaction opened from inside another on the same file
// would wait for the lock its own caller holds until the timeout and then
// blame another process; it fails at once instead, as bbolt does on misuse.
// Other goroutines of the process still queue on the lock as processes do.
var inTx = struct {
	sync.Mutex
	m map[string]map[uint64]struct{}
}{m: map[string]map[uint64]struct{}{}}

// enterTx registers the calling goroutine in path's transaction; leave
// unregisters it. ErrNested if the goroutine is already inside one.
func enterTx(path string) (leave func(), err error) {
	g := goroutineID()
	inTx.Lock()
	defer inTx.Unlock()
	held := inTx.m[path]
	if _, ok := held[g]; ok {
		return nil, fmt.Errorf("%s: %w: View or Update called inside another View or Update on the same state file, "+
			"whose lock it would wait for", path, ErrNested)
	}
	if held == nil {
		held = map[uint64]struct{}{}
		inTx.m[path] = held
	}
	held[g] = struct{}{}
	return func() {
		inTx.Lock()
		defer inTx.Unlock()
		delete(held, g)
		if len(held) == 0 {
			delete(inTx.m, path)
		}
	}, nil
}
