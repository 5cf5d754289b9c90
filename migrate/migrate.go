// Package migrate takes a live node over from amazon-vpc-cni-k8s (aws-node):
// it reads the reference's IPAM checkpoint, adopts the node, its ENIs and
// addresses from EC2 as a reconcile pass learns them, and records every pod
// of the checkpoint as an assignment in the same transaction. Pod veths the
// checkpoint does not name are restored as package rebuild restores them.
package migrate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/internal/awsnode"
	"vpc-cni/internal/printers"
	"vpc-cni/internal/usage"
	"vpc-cni/netns"
	"vpc-cni/rebuild"
	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// Report is what migrate did (or, dry-run, would do); its JSON is the
// CLI's contract.
type Report struct {
	Checkpoint string   `json:"checkpoint"`
	DryRun     bool     `json:"dryRun,omitempty"`
	Already    bool     `json:"alreadyMigrated,omitempty"` // a second run: nothing changed
	ENIs       int      `json:"enis"`                      // the node's attached ENIs per EC2
	Pods       []Pod    `json:"pods"`
	Findings   []string `json:"findings,omitempty"`
	Failed     []string `json:"failed,omitempty"`
	Calls      []string `json:"calls,omitempty"`
}

// ReadCheckpoint reads and checks the reference's checkpoint; any problem
// is the caller's to fix (exit 2).
func ReadCheckpoint(path string) ([]awsnode.Pod, error) {
	pods, err := awsnode.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, usage.Errorf("no checkpoint at %s: is aws-node's state on this node? (--checkpoint names another path; "+
			"a node where aws-node never gave a pod an address needs no migration: vpcctl install)", path)
	}
	if err != nil {
		return nil, usage.Wrap(fmt.Errorf("reading the aws-node checkpoint: %w", err))
	}
	nics, err := awsnode.NICFiles(path)
	if err == nil && len(nics) > 0 {
		return nil, usage.Errorf("%s: pods on network cards other than 0 (ENABLE_MULTI_NIC) are not supported", nics[0])
	}
	return pods, err
}

// Options are a migration's inputs.
type Options struct {
	Checkpoint string // where the pods came from, for the report
	DryRun     bool   // plan and report; change nothing
	Force      bool   // migrate even though the state already has assignments
}

// Run checks everything it can before it writes: the state's existing
// assignments, the kernel's wiring and EC2's addresses. Then it adopts the
// node and records the pods in one transaction. The caller holds the
// reconcile lock. The report is filled as far as the migration got: a
// refusal's names every problem.
func Run(ctx context.Context, r *reconcile.Runner, pods []awsnode.Pod, o Options) (*Report, error) {
	out := &Report{Checkpoint: o.Checkpoint, DryRun: o.DryRun, Pods: []Pod{}}
	return out, out.run(ctx, r, pods, o.Force)
}

func (out *Report) run(ctx context.Context, r *reconcile.Runner, pods []awsnode.Pod, force bool) error {
	have, err := existingAssignments(r.Store)
	if err != nil {
		return err
	}
	prefix, err := settings.VethPrefixOf(settings.Inputs{Env: r.Env, File: r.File})
	if err != nil {
		return usage.Wrap(err)
	}
	cfg, err := settings.Resolve(settings.Overrides{}, settings.Inputs{Env: r.Env, File: r.File, Names: r.Names}) // profiles: no override holds any
	if err != nil {
		return usage.Wrap(err)
	}
	wired, err := netns.DiscoverPodsWith(prefix)
	if err != nil {
		return fmt.Errorf("reading the pods' wiring from the kernel: %w", err)
	}
	enis, err := out.readENIs(ctx, r)
	if err != nil {
		return err
	}
	m, err := planMigration(pods, wired, enis, prefix)
	if err == nil {
		out.Findings = m.markProfiles(enis, cfg) // before anything is written: a dry run says the same
	}
	out.Pods = sortedPods(m.pods)
	if err != nil {
		return usage.Wrap(err)
	}
	switch {
	case alreadyMigrated(have, m):
		out.Already = true
		return nil
	case len(have) > 0 && !force:
		return usage.Errorf("the state already has %d assignments (%s holds %s): this node is served by vpc-cni already; "+
			"--force adds the checkpoint's pods to them", len(have), have[0].Key, have[0].IP)
	case out.DryRun:
		out.Pods = sortedPods(append(out.Pods, unlistedPods(m.unlisted)...))
		return nil
	}
	return out.adoptPods(ctx, r, m)
}

// readENIs reads the node's ENIs from EC2 and counts the attached ones.
func (out *Report) readENIs(ctx context.Context, r *reconcile.Runner) ([]cloud.ENIInfo, error) {
	id, err := r.Cloud.Identity(ctx)
	if err != nil {
		return nil, fmt.Errorf("learning the node from IMDS: %w", err)
	}
	enis, err := r.Cloud.InstanceENIs(ctx, id.InstanceID)
	out.Calls = append(out.Calls, "DescribeNetworkInterfaces")
	if err != nil {
		return nil, fmt.Errorf("reading the node's ENIs from EC2: %w", err)
	}
	for _, e := range enis {
		if e.Attached {
			out.ENIs++
		}
	}
	return enis, nil
}

func existingAssignments(st *store.Store) ([]store.Assignment, error) {
	var have []store.Assignment
	err := st.View(func(tx *store.Tx) (err error) { have, err = tx.Assignments(); return err })
	if errors.Is(err, store.ErrNotInitialized) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the state's assignments: %w", err)
	}
	return have, nil
}

// adoptPods runs the adoption: a checkpoint pod that cannot be recorded
// rolls the whole transaction back.
func (out *Report) adoptPods(ctx context.Context, r *reconcile.Runner, m migration) error {
	now := time.Now()
	var unlisted []Pod
	rep, err := r.Adopt(ctx, func(tx *store.Tx) error {
		for _, a := range m.adopt {
			if _, err := tx.Restore(a, now); err != nil {
				return fmt.Errorf("recording %s (%s): %w", store.AssignmentKey(a.ContainerID, a.IfName), a.IP, err)
			}
		}
		rb := &rebuild.Report{}
		for _, w := range m.unlisted {
			rb.Restore(tx, w, nil, now)
		}
		unlisted = unlistedFrom(rb)
		out.Failed = rb.Failed
		return nil
	})
	if rep != nil {
		out.Calls = append(out.Calls, rep.Calls...)
		for _, f := range rep.Findings {
			out.Findings = append(out.Findings, f.Message)
		}
		out.Failed = append(out.Failed, rep.Failed...)
	}
	if err != nil {
		return fmt.Errorf("%w; nothing was recorded", err)
	}
	out.Pods = sortedPods(append(out.Pods, unlisted...))
	return nil
}

// unlistedPods is how a dry run shows the pod veths the checkpoint misses.
func unlistedPods(ws []netns.PodWiring) []Pod {
	var out []Pod
	for _, w := range ws {
		ip := w.IP
		if !ip.IsValid() {
			ip = w.IP6
		}
		out = append(out, Pod{IP: ip.String(), HostVeth: w.HostVeth, Netns: w.Netns, Adopted: true,
			Note: "wired in the kernel, not in the checkpoint: would be restored as `state rebuild` does"})
	}
	return out
}

func unlistedFrom(rb *rebuild.Report) []Pod {
	var out []Pod
	for _, p := range rb.Pods {
		note := "wired in the kernel, not in the checkpoint: restored as `state rebuild` does; " + p.Note
		out = append(out, Pod{Key: p.Key, IP: p.IP, HostVeth: p.HostVeth, Netns: p.Netns,
			Adopted: p.Key != "" && !strings.HasPrefix(p.Note, "not restored"), Note: note})
	}
	return out
}

// Rows is the table form of the report.
func (out *Report) Rows(t *printers.Table) {
	switch {
	case out.Already:
		t.Row("ALREADY MIGRATED", "every pod of the checkpoint is recorded; nothing changed", "", "", "")
	case out.DryRun:
		t.Row("DRY RUN", "nothing changed", "", "", "")
	}
	t.Row("CHECKPOINT", out.Checkpoint, "", "", "")
	t.Row("FROM EC2", printers.Plural(out.ENIs, "attached ENI", "attached ENIs"), "", "", "")
	t.Header("POD", "IP", "ENI", "ADOPTED", "NOTE")
	for _, p := range out.Pods {
		t.Row(printers.FirstOf(p.Pod, p.HostVeth), p.IP, eniColumn(p), p.Adopted, p.Note)
	}
	for _, f := range out.Findings {
		t.Row("FINDING", f, "", "", "")
	}
	for _, f := range out.Failed {
		t.Row("FAILED", f, "", "", "")
	}
}

// eniColumn is the pod's ENI, with its profile when it has one.
func eniColumn(p Pod) string {
	if p.Profile == "" {
		return p.ENI
	}
	return p.ENI + " (profile " + p.Profile + ")"
}
