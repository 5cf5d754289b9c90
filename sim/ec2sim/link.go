package ec2sim

import (
	"fmt"
	"time"
)

// plugLink makes an attached ENI's link on the node: at once, or after
// Faults.LinkDelay, as a real node's driver and udev take seconds after the
// attach. IMDS lists the ENI only once its link exists. The caller holds s.mu.
func (s *Sim) plugLink(e *eniRec, a *attachment) error {
	d := s.faults.LinkDelay
	if d <= 0 {
		if err := s.linkUp(e, a); err != nil {
			return err
		}
		a.linked = true
		return nil
	}
	a.pending = time.AfterFunc(d, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if e.attach != a || s.enis[e.id] != e {
			return // detached meanwhile
		}
		a.pending = nil
		if err := s.linkUp(e, a); err != nil {
			s.linkErr = fmt.Errorf("ec2sim: creating the link of %s after %v: %w", e.id, d, err)
			return
		}
		a.linked = true
	})
	return nil
}

// linkName is the kernel name of an ENI's link: eth<device> on card 0 (as
// the node's first card numbers them), c<card>eth<device> on the others.
func linkName(a *attachment) string {
	if a.cardIndex == 0 {
		return fmt.Sprintf("eth%d", a.deviceIndex)
	}
	return fmt.Sprintf("c%deth%d", a.cardIndex, a.deviceIndex)
}

// LinkError is the last failure to create a delayed link (nil if none):
// such a failure has no EC2 call to answer.
func (s *Sim) LinkError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.linkErr
}
