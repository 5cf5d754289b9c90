package commands

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/internal/awsnode"
	"vpc-cni/netns"
	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/store"
)

func migrateCommand() *cli.Command {
	return &cli.Command{
		Name:  "migrate",
		Usage: "take over a live node from amazon-vpc-cni-k8s (aws-node): its pods keep their addresses",
		Description: `Reads the reference's IPAM checkpoint (the pods it gave addresses to), adopts the node, its
ENIs and their addresses from EC2 as a reconcile pass learns them, and records every pod of the
checkpoint as an assignment in the same transaction, before any pass could release its address as
excess. Each pod's host wiring (veth "eni"+sha1, /32 route, rules 512 and 1536) is already what this
plugin makes, so the runtime's DEL works with it. A pod whose host veth is gone is left out, as the
reference's own restore prunes it; pod veths the checkpoint does not name are restored as
'vpcctl state rebuild' restores them.

Stop aws-node on the node first (see the README's "Migrating from amazon-vpc-cni-k8s"); write this
plugin's conflist after. Refused, with nothing changed: a malformed checkpoint or one of an unknown
version, addresses EC2 does not list on the node's ENIs, and a state that already has assignments
(unless --force). A second run finds the pods recorded and changes nothing.

Examples:
   vpcctl migrate --from-aws-node --dry-run
   vpcctl migrate --from-aws-node
   vpcctl migrate --from-aws-node --checkpoint /host/var/run/aws-node/ipam.json -o json`,
		Flags: []cli.Flag{
			stateDirFlag(),
			configFlag(),
			&cli.BoolFlag{Name: "from-aws-node", Usage: "migrate from amazon-vpc-cni-k8s (required: the only source)"},
			&cli.StringFlag{Name: "checkpoint", Value: awsnode.DefaultPath, Usage: "the reference's IPAM checkpoint"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print what would be adopted and change nothing"},
			&cli.BoolFlag{Name: "force", Usage: "migrate even though the state already has assignments"},
			&cli.DurationFlag{Name: "timeout", Value: 2 * time.Minute, Usage: "deadline for the whole migration"},
			outputFlag("table"),
		},
		Before: noArgs,
		Action: migrateAction,
	}
}

// Migrated is what migrate did (or, dry-run, would do).
type Migrated struct {
	Checkpoint string        `json:"checkpoint"`
	DryRun     bool          `json:"dryRun,omitempty"`
	Already    bool          `json:"alreadyMigrated,omitempty"` // a second run: nothing changed
	ENIs       int           `json:"enis"`                      // the node's attached ENIs per EC2
	Pods       []MigratedPod `json:"pods"`
	Findings   []string      `json:"findings,omitempty"`
	Failed     []string      `json:"failed,omitempty"`
	Calls      []string      `json:"calls,omitempty"`
}

func migrateAction(c *cli.Context) error {
	if _, err := format(c); err != nil {
		return err
	}
	if !c.Bool("from-aws-node") {
		return usagef("migrate: say where from: --from-aws-node (the only source)")
	}
	pods, err := readCheckpoint(c.String("checkpoint"))
	if err != nil {
		return err
	}
	in, err := knobInputs(c)
	if err != nil {
		return err
	}
	st, err := openStore(c)
	if err != nil {
		return err
	}
	ctx, cancel := passContext(c.Context, c.Duration("timeout"))
	defer cancel()
	unlock, held, err := st.LockReconcile(true, c.Duration("timeout"))
	if err != nil || !held {
		return fmt.Errorf("taking the reconcile lock %s: %v", st.ReconcileLockPath(), cmpErr(err, "held too long by another process"))
	}
	defer unlock()
	runner, err := newRunner(ctx, st, in)
	if err != nil {
		return classifyRunError(ctx, err)
	}
	out := &Migrated{Checkpoint: c.String("checkpoint"), DryRun: c.Bool("dry-run"), Pods: []MigratedPod{}}
	err = migrate(ctx, runner, pods, c.Bool("force"), out)
	// A failure before the plan (IMDS, EC2, the store) leaves nothing worth a
	// table; a refusal's table names every problem.
	if err == nil || len(out.Failed) > 0 {
		if rerr := render(c, out, func(t *table) { migratedRows(t, out) }); err == nil {
			err = rerr
		}
	}
	if err == nil && len(out.Failed) > 0 {
		err = fmt.Errorf("migrate: %d problems: %v", len(out.Failed), out.Failed)
	}
	return err
}

// readCheckpoint reads and checks the reference's checkpoint; any problem
// is the caller's to fix (exit 2).
func readCheckpoint(path string) ([]awsnode.Pod, error) {
	pods, err := awsnode.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, usagef("no checkpoint at %s: is aws-node's state on this node? (--checkpoint names another path; "+
			"a node where aws-node never gave a pod an address needs no migration: vpcctl install)", path)
	}
	if err != nil {
		return nil, asUsage(fmt.Errorf("reading the aws-node checkpoint: %w", err))
	}
	nics, err := awsnode.NICFiles(path)
	if err == nil && len(nics) > 0 {
		return nil, usagef("%s: pods on network cards other than 0 (ENABLE_MULTI_NIC) are not supported", nics[0])
	}
	return pods, err
}

// migrate checks everything it can before it writes: the state's existing
// assignments, the kernel's wiring and EC2's addresses. Then it adopts the
// node and records the pods in one transaction.
func migrate(ctx context.Context, r *reconcile.Runner, pods []awsnode.Pod, force bool, out *Migrated) error {
	have, err := existingAssignments(r.Store)
	if err != nil {
		return err
	}
	prefix, err := vethPrefix(settings.Inputs{Env: r.Env, File: r.File})
	if err != nil {
		return err
	}
	wired, err := netns.DiscoverPodsWith(prefix)
	if err != nil {
		return fmt.Errorf("reading the pods' wiring from the kernel: %w", err)
	}
	id, err := r.Cloud.Identity(ctx)
	if err != nil {
		return fmt.Errorf("learning the node from IMDS: %w", err)
	}
	enis, err := r.Cloud.InstanceENIs(ctx, id.InstanceID)
	out.Calls = append(out.Calls, "DescribeNetworkInterfaces")
	if err != nil {
		return fmt.Errorf("reading the node's ENIs from EC2: %w", err)
	}
	for _, e := range enis {
		if e.Attached {
			out.ENIs++
		}
	}
	m, err := planMigration(pods, wired, enis, prefix)
	out.Pods = sortedPods(m.pods)
	if err != nil {
		return asUsage(err)
	}
	switch {
	case alreadyMigrated(have, m):
		out.Already = true
		return nil
	case len(have) > 0 && !force:
		return usagef("the state already has %d assignments (%s holds %s): this node is served by vpc-cni already; "+
			"--force adds the checkpoint's pods to them", len(have), have[0].Key, have[0].IP)
	case out.DryRun:
		out.Pods = sortedPods(append(out.Pods, unlistedPods(m.unlisted)...))
		return nil
	}
	return adoptPods(ctx, r, m, out)
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
func adoptPods(ctx context.Context, r *reconcile.Runner, m migration, out *Migrated) error {
	now := time.Now()
	var unlisted []MigratedPod
	rep, err := r.Adopt(ctx, func(tx *store.Tx) error {
		for _, a := range m.adopt {
			if _, err := tx.Restore(a, now); err != nil {
				return fmt.Errorf("recording %s (%s): %w", store.AssignmentKey(a.ContainerID, a.IfName), a.IP, err)
			}
		}
		rb := &Rebuilt{}
		for _, w := range m.unlisted {
			rb.restore(tx, w, nil, now)
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
func unlistedPods(ws []netns.PodWiring) []MigratedPod {
	var out []MigratedPod
	for _, w := range ws {
		out = append(out, MigratedPod{IP: w.IP.String(), HostVeth: w.HostVeth, Netns: w.Netns, Adopted: true,
			Note: "wired in the kernel, not in the checkpoint: would be restored as `state rebuild` does"})
	}
	return out
}

func unlistedFrom(rb *Rebuilt) []MigratedPod {
	var out []MigratedPod
	for _, p := range rb.Pods {
		note := "wired in the kernel, not in the checkpoint: restored as `state rebuild` does; " + p.Note
		out = append(out, MigratedPod{Key: p.Key, IP: p.IP, HostVeth: p.HostVeth, Netns: p.Netns,
			Adopted: p.Key != "" && !strings.HasPrefix(p.Note, "not restored"), Note: note})
	}
	return out
}

func migratedRows(t *table, out *Migrated) {
	switch {
	case out.Already:
		t.row("ALREADY MIGRATED", "every pod of the checkpoint is recorded; nothing changed", "", "", "")
	case out.DryRun:
		t.row("DRY RUN", "nothing changed", "", "", "")
	}
	t.row("CHECKPOINT", out.Checkpoint, "", "", "")
	t.row("FROM EC2", fmt.Sprintf("%d attached ENIs", out.ENIs), "", "", "")
	t.row("POD", "IP", "ENI", "ADOPTED", "NOTE")
	for _, p := range out.Pods {
		t.row(cmpStr(p.Pod, p.HostVeth), p.IP, p.ENI, p.Adopted, p.Note)
	}
	for _, f := range out.Findings {
		t.row("FINDING", f, "", "", "")
	}
	for _, f := range out.Failed {
		t.row("FAILED", f, "", "", "")
	}
}
