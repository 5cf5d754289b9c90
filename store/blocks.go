package store

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"vpc-cni/pool"
)

// AddBlocks adds new blocks (with their addresses) to an existing ENI.
// A block or address the node already has is an ErrExists error.
func (t *Tx) AddBlocks(eniID string, blocks []pool.Block) error {
	e, err := t.mustENI(eniID)
	if err != nil {
		return err
	}
	existing, err := t.eniBlocks(eniID)
	if err != nil {
		return err
	}
	all := slices.Clone(blocks)
	for _, b := range existing {
		all = append(all, pool.Block{CIDR: b.CIDR})
	}
	if err := validateBlocks(eniID, all); err != nil {
		return err
	}
	if err := t.checkAddrsFree(eniID, blocks); err != nil {
		return err
	}
	for _, b := range blocks {
		if err := t.putBlock(e, b); err != nil {
			return err
		}
	}
	return nil
}

// RemoveBlocks deletes blocks and their addresses from an ENI (after EC2
// took them back). Blocks it does not have are skipped.
func (t *Tx) RemoveBlocks(eniID string, cidrs []netip.Prefix) error {
	e, ok, err := t.eni(eniID)
	if err != nil || !ok {
		return err
	}
	for _, cidr := range cidrs {
		if err := t.deleteBlock(e, cidr); err != nil {
			return err
		}
	}
	return nil
}

// MarkReleasing sets or clears the blocks' Releasing flag. While set, their
// addresses are never handed out. Setting it on a block that has an
// assigned address is an ErrAssigned error and changes nothing. Clearing it
// makes the addresses available again (any stored Releasing state becomes
// Free).
func (t *Tx) MarkReleasing(eniID string, cidrs []netip.Prefix, on bool) error {
	e, err := t.mustENI(eniID)
	if err != nil {
		return err
	}
	members := make([][]addrEntry, len(cidrs))
	for i, cidr := range cidrs {
		if members[i], err = t.releasable(eniID, cidr, on); err != nil {
			return err
		}
	}
	for i, cidr := range cidrs {
		if err := t.bucket(bBlocks).Put(blockKey(eniID, cidr), blockValue(on)); err != nil {
			return err
		}
		for _, a := range members[i] {
			if !on && a.Rec.State == pool.Releasing {
				a.Rec.State = pool.Free
				if err := t.putAddr(e, on, a.IP, a.Rec); err != nil {
					return err
				}
				continue
			}
			if err := t.syncAvail(e, on, a.IP, a.Rec); err != nil {
				return err
			}
		}
	}
	return nil
}

// releasable returns the block's addresses, refusing a missing block and,
// when on, a block a pod holds an address of.
func (t *Tx) releasable(eniID string, cidr netip.Prefix, on bool) ([]addrEntry, error) {
	if _, ok, err := t.block(eniID, cidr); err != nil {
		return nil, err
	} else if !ok {
		return nil, fmt.Errorf("ENI %s block %s: %w", eniID, cidr, ErrNotFound)
	}
	addrs, err := t.blockAddrs(eniID, cidr)
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if on && a.Rec.State == pool.Assigned {
			return nil, fmt.Errorf("ENI %s block %s: %s held by %s: %w", eniID, cidr, a.IP, a.Rec.Owner, ErrAssigned)
		}
	}
	return addrs, nil
}

func validateENI(e pool.ENI) error {
	if e.ID == "" || len(e.ID) > 255 || strings.ContainsRune(e.ID, 0) {
		return fmt.Errorf("ENI ID %q: %w", e.ID, ErrInvalid)
	}
	if e.DeviceIndex < 0 || e.DeviceIndex > 1<<31 {
		return fmt.Errorf("ENI %s device index %d: %w", e.ID, e.DeviceIndex, ErrInvalid)
	}
	return validateBlocks(e.ID, e.Blocks)
}

// validateBlocks checks that blocks are distinct, aligned and do not
// overlap, and that every address is valid, unique and inside its block.
func validateBlocks(eniID string, blocks []pool.Block) error {
	seen := map[netip.Addr]bool{}
	cidrs := make([]netip.Prefix, 0, len(blocks))
	for _, b := range blocks {
		if !b.CIDR.IsValid() || b.CIDR != b.CIDR.Masked() {
			return fmt.Errorf("ENI %s block %s: not an aligned prefix: %w", eniID, b.CIDR, ErrInvalid)
		}
		cidrs = append(cidrs, b.CIDR)
		for _, a := range b.Addrs {
			if !a.IP.IsValid() || a.IP.Zone() != "" || !b.CIDR.Contains(a.IP) {
				return fmt.Errorf("ENI %s block %s: address %s not in the block: %w", eniID, b.CIDR, a.IP, ErrInvalid)
			}
			if seen[a.IP] {
				return fmt.Errorf("ENI %s: address %s listed twice: %w", eniID, a.IP, ErrInvalid)
			}
			seen[a.IP] = true
			if _, err := stateByte(a.State); err != nil {
				return fmt.Errorf("ENI %s address %s: %w", eniID, a.IP, err)
			}
		}
	}
	slices.SortFunc(cidrs, netip.Prefix.Compare)
	for i := 1; i < len(cidrs); i++ {
		if cidrs[i-1].Overlaps(cidrs[i]) {
			return fmt.Errorf("ENI %s: blocks %s and %s overlap: %w", eniID, cidrs[i-1], cidrs[i], ErrExists)
		}
	}
	return nil
}
