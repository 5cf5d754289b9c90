package store

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"syscall"
	"time"

	"vpc-cni/pool"
)

// A process that wires a pod after its take (the plugin's ADD) must know,
// once the pod is wired, whether the file it took from is still the node's
// state: a rebuild in between made a file that holds the address free. With
// Options.HoldFile the Store keeps the file of its last write open, so its
// inode cannot be handed to a newer file, and Unchanged answers with one
// stat; only a changed file costs a transaction (Tx.Record).

// holdFile keeps path open as the file the write transaction just used
// (opened): a second open, never a dup, which would keep bbolt's flock.
func (s *Store) holdFile(opened *os.File) error {
	f, err := os.OpenFile(s.path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s: %w: %v", s.path, ErrReplaced, err)
	}
	a, errA := f.Stat()
	b, errB := opened.Stat()
	if errA != nil || errB != nil || !os.SameFile(a, b) {
		f.Close()
		return fmt.Errorf("%s: %w: the file was replaced during the transaction", s.path, ErrReplaced)
	}
	s.Close()
	s.held, s.heldInfo = f, a
	return nil
}

// Unchanged reports whether the path still names the file of the Store's
// last write transaction (Options.HoldFile): one lstat. False when no write
// ran, or the file was removed or replaced since.
func (s *Store) Unchanged() (bool, error) {
	if s.held == nil {
		return false, nil
	}
	cur, err := os.Lstat(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("state database %s: %w", s.path, err)
	}
	return os.SameFile(s.heldInfo, cur), nil
}

// Close lets go of the file Options.HoldFile kept open.
func (s *Store) Close() error {
	if s.held == nil {
		return nil
	}
	err := s.held.Close()
	s.held, s.heldInfo = nil, nil
	return err
}

// ErrReleasing: the address is being returned to EC2 (a pass's intent).
var ErrReleasing = errors.New("address is being released to EC2")

// Record makes sure a wired pod's assignment a is in this file: already
// there with the same addresses (recorded false), or restored now as
// `state rebuild` restores a running pod (Restore). The address must be the
// node's in this file and not held for another key or being released:
// else ErrNotFound, ErrAssigned or ErrReleasing, and nothing is written.
func (t *Tx) Record(a Assignment, now time.Time) (recorded bool, err error) {
	cur, ok, err := t.Assignment(a.Key)
	if err != nil {
		return false, err
	}
	if ok && cur.IP == a.IP && cur.IPv6 == a.IPv6 {
		return false, nil
	}
	if ok {
		return false, fmt.Errorf("%s holds %s in this file, not %s: %w", a.Key, cur.IP, a.IP, ErrAssigned)
	}
	if err := t.notReleasing(a.IP); err != nil {
		return false, err
	}
	_, err = t.Restore(a, now)
	return err == nil, err
}

// notReleasing fails when ip's block is being returned to EC2.
func (t *Tx) notReleasing(ip netip.Addr) error {
	if !ip.IsValid() {
		return nil
	}
	rec, found, err := t.addr(ip)
	if err != nil || !found {
		return err
	}
	blk, _, err := t.block(rec.ENIID, rec.Block)
	if err == nil && (blk.Releasing || rec.State == pool.Releasing) {
		err = fmt.Errorf("%s: %w", ip, ErrReleasing)
	}
	return err
}
