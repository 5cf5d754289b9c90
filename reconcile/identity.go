package reconcile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/store"
)

// The node's identity is checked, not assumed: a state dir baked into an
// image or copied from another node names another instance, its ENIs and
// its pods' addresses. Every pass compares the stored instance ID and
// primary MAC with IMDS; the plugin trusts the file within the kernel boot
// under which a pass (or an earlier process) last confirmed it, and asks
// IMDS itself after a boot (a new instance from an image boots a new
// kernel; so does a reboot of the same instance, which IMDS then confirms).

// bootIDPath is the kernel's random ID of the current boot.
const bootIDPath = "/proc/sys/kernel/random/boot_id"

// BootID is the current kernel boot's ID; "" when it cannot be read, which
// matches no record, so IMDS is asked.
func BootID() string {
	b, err := os.ReadFile(bootIDPath)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// Foreign is a state file whose node is another instance than the one IMDS
// names: nothing of it may be used on this one.
type Foreign struct {
	StoredID, StoredMAC string
	Self                cloud.Self
}

// Error names both instances and what comes next.
func (f Foreign) Error() string {
	return fmt.Sprintf("state not confirmed for this instance: the state file is instance %s's (primary MAC %s) but IMDS says this is %s (%s); "+
		"the next reconcile pass sets it aside and learns this node", f.StoredID, f.StoredMAC, f.Self.InstanceID, f.Self.PrimaryMAC)
}

// IsForeign reports whether err is a Foreign state file.
func IsForeign(err error) bool {
	var f Foreign
	return errors.As(err, &f)
}

// CheckSelf asks IMDS who this instance is and compares it with node: nil
// when it is node, Foreign when it is another, else IMDS's error.
func CheckSelf(ctx context.Context, md interface {
	Self(context.Context) (cloud.Self, error)
}, node store.Node) error {
	self, err := md.Self(ctx)
	if err != nil {
		return fmt.Errorf("confirming the node's identity with IMDS: %w", err)
	}
	if self.InstanceID != node.InstanceID || !strings.EqualFold(self.PrimaryMAC, node.PrimaryMAC) {
		return Foreign{StoredID: node.InstanceID, StoredMAC: node.PrimaryMAC, Self: self}
	}
	return nil
}

// Confirm is the plugin's check of a node not confirmed in this boot:
// CheckSelf through IMDS (the caller's ctx bounds it), and on success the
// boot recorded so the next process trusts the file without asking.
func Confirm(ctx context.Context, st *store.Store, node store.Node, boot string) error {
	md, err := cloud.New(ctx, cloud.Options{UserAgent: "vpc-cni-plugin", HTTPTimeout: cloud.AttemptTimeout(ctx)})
	if err != nil {
		return err
	}
	if err := CheckSelf(ctx, md, node); err != nil {
		return err
	}
	if boot == "" || st.ReadOnly() {
		return nil
	}
	return st.Update(func(tx *store.Tx) error { return tx.ConfirmBoot(node.InstanceID, boot) })
}

// EventIdentityChanged is the kind of the event a pass records in the new
// state file when it set another instance's aside. **contract** (vpcctl events)
const EventIdentityChanged = "identity-changed"

// KeptPrefix starts the name of a state file set aside as another
// instance's: state.db.<instance ID>.<UTC time>. doctor looks for them.
const KeptPrefix = store.DBFile + "."

// SetAside is another instance's state file, kept for the operator.
type SetAside struct {
	Path string
	Foreign
}

// Event is the line the new state file records.
func (s SetAside) Event(now time.Time) store.Event {
	return store.Event{Time: now, Kind: EventIdentityChanged, Message: fmt.Sprintf(
		"the state file was instance %s's (primary MAC %s), not this instance %s's (%s): set aside as %s, unused; the node learnt afresh from IMDS, EC2 and the kernel",
		s.StoredID, s.StoredMAC, s.Self.InstanceID, s.Self.PrimaryMAC, s.Path)}
}

// setAside renames another instance's state file to
// state.db.<its instance ID>.<time>, mode 0600 (store.MoveAside: the
// caller holds the reconcile lock).
func setAside(st *store.Store, f Foreign, now time.Time) (SetAside, error) {
	id := strings.ReplaceAll(f.StoredID, "/", "_") // a file name, whatever the record says
	to := fmt.Sprintf("%s.%s.%s", st.Path(), id, now.UTC().Format("20060102T150405.000000000Z"))
	if err := st.MoveAside(to); err != nil {
		return SetAside{}, fmt.Errorf("setting aside instance %s's state file: %w", f.StoredID, err)
	}
	return SetAside{Path: to, Foreign: f}, nil
}

// confirmSelf is a pass's identity check of a known node: the same
// instance has its boot recorded; another's file is set aside and the pass
// goes on as on a fresh node (p.fresh; nothing of the old file is used).
// A dry run stops at Foreign: it moves nothing.
func (p *pass) confirmSelf(ctx context.Context) error {
	err := CheckSelf(ctx, p.Cloud, p.node)
	var f Foreign
	if !errors.As(err, &f) {
		if err != nil {
			return err
		}
		return p.recordBoot()
	}
	if p.opts.DryRun {
		return err
	}
	kept, err := setAside(p.Store, f, p.now())
	if err != nil {
		return err
	}
	p.log().Warn("another instance's state file set aside", "kept", kept.Path, "was", f.StoredID, "this", f.Self.InstanceID)
	p.kept = &kept
	p.fresh, p.node, p.orphans, p.lastLeakSweep = true, store.Node{}, nil, time.Time{}
	return nil
}

// recordBoot records the boot under which this pass confirmed the node.
func (p *pass) recordBoot() error {
	boot := BootID()
	if p.opts.DryRun || boot == "" || p.node.ConfirmedBoot == boot {
		return nil
	}
	p.node.ConfirmedBoot = boot
	return p.Store.Update(func(tx *store.Tx) error { return tx.ConfirmBoot(p.node.InstanceID, boot) })
}

// keptEvent records, in the file the pass creates, that it set another
// instance's aside.
func (p *pass) keptEvent(tx *store.Tx) error {
	if p.kept == nil {
		return nil
	}
	return tx.AddEvent(p.kept.Event(p.now()))
}
