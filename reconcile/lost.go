package reconcile

import (
	"errors"
	"fmt"

	"vpc-cni/netns"
	"vpc-cni/store"
)

// Lost is a state file that holds no pool (missing, or never given a node)
// on a node whose kernel shows running pods' wiring: a new file would hold
// their addresses as free. Pods is that wiring's count; 0 is not lost. As an
// error it is what a pass returns instead of creating such a file: the
// caller rebuilds (rebuild.Recover) and runs again.
type Lost struct {
	Pods int
	// Kept: the pass set another instance's state file aside first; the
	// rebuild records it.
	Kept *SetAside
}

// Message is what STATUS, doctor, a refused ADD and reconcile say.
func (l Lost) Message() string {
	return fmt.Sprintf("state lost: %d running pods' wiring found with no state; run `vpcctl state rebuild`", l.Pods)
}

func (l Lost) Error() string { return l.Message() }

// IsLostState reports whether err is a pass's Lost.
func IsLostState(err error) bool {
	var l Lost
	return errors.As(err, &l)
}

// lostCheck is the fresh-node guard of a pass that would create the state
// file: the kernel's running pods, read through the Host (a Runner without
// one sees no kernel, as it sets none up).
func (p *pass) lostCheck() error {
	if p.Host == nil || p.rebuilding {
		return nil
	}
	hs, err := p.Host.ListPods(p.cfg.VethPrefix)
	if err != nil {
		return fmt.Errorf("a fresh state file: reading the pods' wiring from the kernel before creating it: %w", err)
	}
	if n := hs.RunningPods(); n > 0 {
		return Lost{Pods: n, Kept: p.kept}
	}
	return nil
}

// update is a pass's write: the first write of a pass on a fresh node
// creates the file (store.Create, under the reconcile lock the caller
// holds), every other one fails on a missing or replaced file.
func (p *pass) update(fn func(*store.Tx) error) error {
	if !p.fresh {
		return p.Store.Update(fn)
	}
	create := func(tx *store.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return p.keptEvent(tx)
	}
	if err := p.Store.Create(create); err != nil {
		return err
	}
	p.fresh = false
	return nil
}

// ListPods is the kernel's pod wiring (KernelHost).
func (KernelHost) ListPods(vethPrefix string) (netns.HostState, error) {
	return netns.ListHostWith(vethPrefix)
}
