//go:build linux

package ec2sim

import (
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// linkUp creates, in cfg.LinkNetns, the link "eth<device>" (linkName)
// carrying the ENI's MAC, left down, as the kernel would show a hot-plugged
// ENI. It is a dummy link, or, on kernels without the dummy driver, one end of
// a veth pair whose other end ("sim-eth<device>", up, so the ENI end gets a
// carrier once it is brought up) stays in the same namespace.
func (s *Sim) linkUp(e *eniRec, a *attachment) error {
	if s.cfg.LinkNetns == "" {
		return nil
	}
	return s.withNetns(func(h *netlink.Handle) error {
		mac, err := net.ParseMAC(e.mac)
		if err != nil {
			return err
		}
		name := linkName(a)
		if old, err := h.LinkByName(name); err == nil { // left over from an earlier run
			_ = h.LinkDel(old)
		}
		attrs := netlink.LinkAttrs{Name: name, HardwareAddr: mac}
		if s.cfg.LinkPeerNetns != "" {
			return s.addVethToPeerNetns(h, attrs, "sim-"+name)
		}
		err = h.LinkAdd(&netlink.Dummy{LinkAttrs: attrs})
		if !errors.Is(err, unix.EOPNOTSUPP) {
			return err
		}
		return addVethENI(h, attrs, "sim-"+name)
	})
}

func addVethENI(h *netlink.Handle, attrs netlink.LinkAttrs, peerName string) error {
	if old, err := h.LinkByName(peerName); err == nil {
		_ = h.LinkDel(old)
	}
	if err := h.LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: peerName}); err != nil {
		return err
	}
	peer, err := h.LinkByName(peerName)
	if err != nil {
		return err
	}
	return h.LinkSetUp(peer)
}

// addVethToPeerNetns creates the ENI link as a veth whose peer is in
// cfg.LinkPeerNetns, up there.
func (s *Sim) addVethToPeerNetns(h *netlink.Handle, attrs netlink.LinkAttrs, peerName string) error {
	peerNS, err := netns.GetFromPath(s.cfg.LinkPeerNetns)
	if err != nil {
		return fmt.Errorf("netns %s: %w", s.cfg.LinkPeerNetns, err)
	}
	defer peerNS.Close()
	ph, err := netlink.NewHandleAt(peerNS)
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", s.cfg.LinkPeerNetns, err)
	}
	defer ph.Close()
	if old, err := ph.LinkByName(peerName); err == nil { // left over from an earlier run
		_ = ph.LinkDel(old)
	}
	veth := &netlink.Veth{LinkAttrs: attrs, PeerName: peerName, PeerNamespace: netlink.NsFd(peerNS)}
	if err := h.LinkAdd(veth); err != nil {
		return err
	}
	peer, err := ph.LinkByName(peerName)
	if err != nil {
		return err
	}
	return ph.LinkSetUp(peer)
}

// PlugPrimary creates the primary ENI's link (device 0), as the node has it
// from boot; the caller configures its address and routes.
func (s *Sim) PlugPrimary() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.enis {
		if e.attach != nil && e.attach.deviceIndex == 0 && e.attach.cardIndex == 0 {
			return s.linkUp(e, e.attach)
		}
	}
	return errors.New("ec2sim: no primary ENI")
}

// linkDown deletes the ENI's link, found by its MAC (it may have been renamed).
func (s *Sim) linkDown(e *eniRec) error {
	if s.cfg.LinkNetns == "" {
		return nil
	}
	return s.withNetns(func(h *netlink.Handle) error {
		links, err := h.LinkList()
		if err != nil {
			return err
		}
		for _, l := range links {
			if l.Attrs().HardwareAddr.String() == e.mac {
				return h.LinkDel(l)
			}
		}
		return nil // already gone
	})
}

func (s *Sim) withNetns(fn func(h *netlink.Handle) error) error {
	ns, err := netns.GetFromPath(s.cfg.LinkNetns)
	if err != nil {
		return fmt.Errorf("netns %s: %w", s.cfg.LinkNetns, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", s.cfg.LinkNetns, err)
	}
	defer h.Close()
	return fn(h)
}
