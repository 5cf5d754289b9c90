//go:build !linux

package ec2sim

import "errors"

var errNoLinks = errors.New("ec2sim: LinkNetns needs Linux")

func (s *Sim) linkUp(e *eniRec, a *attachment) error {
	if s.cfg.LinkNetns == "" {
		return nil
	}
	return errNoLinks
}

// PlugPrimary needs Linux.
func (s *Sim) PlugPrimary() error { return errNoLinks }

func (s *Sim) linkDown(e *eniRec) error {
	if s.cfg.LinkNetns == "" {
		return nil
	}
	return errNoLinks
}
