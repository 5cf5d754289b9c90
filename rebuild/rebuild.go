// Package rebuild recreates a damaged or lost state file: the node, its ENIs
// and addresses from EC2 (as a reconcile pass adopts them, with no plan and
// no EC2 mutation), each running pod's assignment from the kernel's wiring,
// named by the runtime's CNI result cache. migrate restores the pod veths
// its checkpoint misses the same way, through Report.Restore.
package rebuild

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"vpc-cni/internal/printers"
	"vpc-cni/netns"
	"vpc-cni/reconcile"
	"vpc-cni/store"
)

// Report is what `state rebuild` did; its JSON is the CLI's contract.
type Report struct {
	MovedAside string   `json:"movedAside,omitempty"` // where the old file went
	ENIs       int      `json:"enis"`
	Addresses  int      `json:"addresses"`
	Pods       []Pod    `json:"pods"`
	Findings   []string `json:"findings,omitempty"`
	Failed     []string `json:"failed,omitempty"`
	Calls      []string `json:"calls"`
	restored   int      // pods whose assignment Restore recorded
	kept       *reconcile.SetAside
}

// Pod is one pod interface found in the kernel.
type Pod struct {
	Key      string `json:"key"`
	IP       string `json:"ip"`
	HostVeth string `json:"hostVeth"`
	Netns    string `json:"netns"`
	Pod      string `json:"pod,omitempty"`
	Note     string `json:"note,omitempty"` // what could not be recovered
}

// Options are a rebuild's inputs.
type Options struct {
	CNICacheDir string // the runtime's CNI cache (results/ under it)
	Force       bool   // rebuild even a sound file
	VethPrefix  string // AWS_VPC_K8S_CNI_VETHPREFIX: the pods' host veths start with it ("" is "eni")
	// NewRunner makes the reconcile runner once the old file is aside
	// (the CLI wires it to EC2, IMDS and the kernel, and words its errors).
	NewRunner func() (*reconcile.Runner, error)
	// ListHost reads the node's pod wiring for Recover's look (nil:
	// netns.ListHost); the plugin passes its Host's.
	ListHost func() (netns.HostState, error)
	// kept: the pass that found the state lost had set another instance's
	// file aside (Pass sets it for its retry).
	kept *reconcile.SetAside
}

// Run moves the old file aside, reads the kernel (the pods as they run),
// then adopts EC2's truth and restores the pods in one transaction. The
// file goes first: an ADD that wires its pod after the kernel is read finds
// its file gone and records the pod once the rebuild is done (under the
// reconcile lock, which the caller holds). st is opened lazily (the file
// may be damaged).
func Run(ctx context.Context, st *store.Store, o Options) (*Report, error) {
	if err := checkNeeded(st, o.Force); err != nil {
		return nil, err
	}
	out := &Report{Pods: []Pod{}}
	var err error
	if out.MovedAside, err = moveAside(st.Path()); err != nil {
		return nil, err
	}
	wired, err := netns.DiscoverPodsWith(o.VethPrefix)
	if err != nil {
		return out, fmt.Errorf("reading the pods' wiring from the kernel: %w", err)
	}
	cache := ReadCNICache(filepath.Join(o.CNICacheDir, "results"))
	runner, err := o.NewRunner()
	if err != nil {
		return out, err
	}
	return out, out.adopt(ctx, runner, wired, cache, "vpcctl state rebuild")
}

// checkNeeded refuses to rebuild a sound file, or one it cannot judge,
// unless forced.
func checkNeeded(st *store.Store, force bool) error {
	switch err := st.CheckFile(); {
	case err == nil && !force:
		return fmt.Errorf("%s is sound (vpcctl doctor checks it); use --force to rebuild it anyway", st.Path())
	case err != nil && !errors.Is(err, store.ErrDamaged) && !errors.Is(err, store.ErrNotInitialized) && !force:
		return fmt.Errorf("%w; use --force to move it aside and rebuild", err)
	}
	return nil
}

// adopt records EC2's node and the kernel's pods, and the event that says
// why, in one transaction.
func (out *Report) adopt(ctx context.Context, runner *reconcile.Runner, wired []netns.PodWiring, cache []CacheEntry, why string) error {
	now := time.Now()
	rep, err := runner.Adopt(ctx, func(tx *store.Tx) error {
		out.Pods, out.Failed, out.restored, out.ENIs, out.Addresses = out.Pods[:0], nil, 0, 0, 0
		for _, w := range wired {
			out.Restore(tx, w, cache, now)
		}
		snap, err := tx.Snapshot()
		if err != nil {
			return err
		}
		for _, e := range snap.ENIs {
			out.ENIs++
			for _, b := range e.Blocks {
				out.Addresses += len(b.Addrs)
			}
		}
		if out.kept != nil {
			if err := tx.AddEvent(out.kept.Event(now)); err != nil {
				return err
			}
		}
		return tx.AddEvent(out.event(why, now))
	})
	if rep != nil {
		out.Calls = rep.Calls
		for _, f := range rep.Findings {
			out.Findings = append(out.Findings, f.Message)
		}
		out.Failed = append(out.Failed, rep.Failed...)
	}
	return err
}

// Restore records one pod interface the kernel shows, named by its cache
// entry when one matches, else by its host veth, and adds it (and any
// failure) to the report.
func (out *Report) Restore(tx *store.Tx, w netns.PodWiring, cache []CacheEntry, now time.Time) {
	p := Pod{IP: wiredIPs(w), HostVeth: w.HostVeth, Netns: w.Netns}
	defer func() { out.Pods = append(out.Pods, p) }()
	if !w.IP.IsValid() && !w.IP6.IsValid() {
		p.Note = "no /32 or /128 route through it: a leftover, not restored (vpcctl gc removes it)"
		return
	}
	a := store.Assignment{IP: w.IP, IPv6: w.IP6, EgressIP: w.EgressIP, HostVeth: w.HostVeth, Netns: w.Netns, IfName: w.IfName}
	if a.IfName == "" {
		a.IfName = "eth0"
	}
	p.Note = name(tx, &a, w, cache)
	if a.PodName != "" {
		p.Pod = a.PodNamespace + "/" + a.PodName
	}
	if w.Netns == "" {
		p.Note = strings.TrimSuffix("its namespace was not found; "+p.Note, "; ")
	}
	p.Key = a.Key
	if _, err := tx.Restore(a, now); err != nil {
		out.Failed = append(out.Failed, fmt.Sprintf("%s (%s): %v", a.Key, p.IP, err))
		p.Note = "not restored: " + err.Error()
		return
	}
	out.restored++
}

// name gives a its runtime attachment (and key): the CNI cache entry's,
// else the one its host veth names (an ADD still under way, whose result
// the runtime has not cached yet), else unknown-<host veth>. A name the
// store already gives another assignment is not taken. It returns what the
// report notes.
func name(tx *store.Tx, a *store.Assignment, w netns.PodWiring, cache []CacheEntry) string {
	if hit, ok := MatchCache(cache, w); ok {
		a.ContainerID, a.IfName, a.Network = hit.ContainerID, hit.IfName, hit.NetworkName
		a.PodNamespace, a.PodName, a.PodUID = hit.arg("K8S_POD_NAMESPACE"), hit.arg("K8S_POD_NAME"), hit.arg("K8S_POD_UID")
		if reconcile.NameFree(tx, a) {
			return ""
		}
	} else if s := w.Sandbox; s.ContainerID != "" {
		a.ContainerID, a.IfName, a.Network = s.ContainerID, s.IfName, s.Network
		if reconcile.NameFree(tx, a) {
			return "no CNI cache entry names it: named by its host veth"
		}
	}
	a.PodNamespace, a.PodName, a.PodUID = "", "", ""
	reconcile.NameUnknown(a, w.HostVeth)
	return "no CNI cache entry or host veth names it: container ID unknown, kept until its namespace goes"
}

// wiredIPs names the pod's VPC addresses as the kernel routes them, IPv4
// first ("" for none).
func wiredIPs(w netns.PodWiring) string {
	switch {
	case w.IP.IsValid() && w.IP6.IsValid():
		return w.IP.String() + "," + w.IP6.String()
	case w.IP6.IsValid():
		return w.IP6.String()
	case w.IP.IsValid():
		return w.IP.String()
	}
	return ""
}

// moveAside renames the state file to state.db.damaged-<time>; a missing
// file is nothing to move.
func moveAside(path string) (string, error) {
	to := fmt.Sprintf("%s.damaged-%s", path, time.Now().UTC().Format("20060102T150405Z"))
	err := os.Rename(path, to)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("moving the state file aside: %w", err)
	}
	return to, nil
}

// Rows is the table form of the report.
func (out *Report) Rows(t *printers.Table) {
	if out.MovedAside != "" {
		t.Row("MOVED ASIDE", out.MovedAside, "", "")
	}
	t.Row("FROM EC2", printers.Plural(out.ENIs, "ENI", "ENIs")+", "+printers.Plural(out.Addresses, "address", "addresses"), "", "")
	t.Header("POD", "IP", "KEY", "NOTE")
	for _, p := range out.Pods {
		t.Row(printers.FirstOf(p.Pod, p.HostVeth), p.IP, p.Key, p.Note)
	}
	for _, f := range out.Failed {
		t.Row("FAILED", f, "", "")
	}
}
