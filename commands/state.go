package commands

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/netns"
	"vpc-cni/settings"
	"vpc-cni/store"
)

func stateCommand() *cli.Command {
	return &cli.Command{
		Name:  "state",
		Usage: "the node's state file",
		Subcommands: []*cli.Command{{
			Name:  "rebuild",
			Usage: "move a damaged or lost state file aside and rebuild it from EC2 and the kernel",
			Description: `The node, its ENIs and addresses come from EC2 (as a reconcile pass reads them, with no
plan and no EC2 mutation); each running pod's assignment comes from the kernel: its host veth
(eni*), /32 route and rules, and the network namespace the veth leads to. Container ID, interface
and pod name come from the runtime's CNI result cache (libcni's, as containerd and CRI-O keep it),
so the runtime's DEL finds the pod. A pod the cache does not name keeps its address under the
key "unknown-<host veth>/<interface>" until its namespace goes (vpcctl gc releases it then).
Running pods keep their addresses. A sound state file is left alone unless --force.

Examples:
   vpcctl doctor                 # says whether the file is damaged
   vpcctl state rebuild
   vpcctl state rebuild --cni-cache-dir /var/lib/cni -o json`,
			Flags: []cli.Flag{
				stateDirFlag(),
				&cli.StringFlag{Name: "cni-cache-dir", Value: "/var/lib/cni", Usage: "the runtime's CNI cache (results/ under it)"},
				&cli.BoolFlag{Name: "force", Usage: "rebuild even if the state file is sound"},
				&cli.DurationFlag{Name: "timeout", Value: 2 * time.Minute, Usage: "deadline for the whole rebuild"},
				outputFlag("table"),
			},
			Before: noArgs,
			Action: rebuildAction,
		}},
	}
}

// Rebuilt is what `state rebuild` did.
type Rebuilt struct {
	MovedAside string       `json:"movedAside,omitempty"` // where the old file went
	ENIs       int          `json:"enis"`
	Addresses  int          `json:"addresses"`
	Pods       []RebuiltPod `json:"pods"`
	Findings   []string     `json:"findings,omitempty"`
	Failed     []string     `json:"failed,omitempty"`
	Calls      []string     `json:"calls"`
}

// RebuiltPod is one pod interface found in the kernel.
type RebuiltPod struct {
	Key      string `json:"key"`
	IP       string `json:"ip"`
	HostVeth string `json:"hostVeth"`
	Netns    string `json:"netns"`
	Pod      string `json:"pod,omitempty"`
	Note     string `json:"note,omitempty"` // what could not be recovered
}

func rebuildAction(c *cli.Context) error {
	if _, err := format(c); err != nil {
		return err
	}
	in, err := knobInputs(c)
	if err != nil {
		return err
	}
	dir := stateDir(c)
	st, err := store.Open(dir, store.Options{Lazy: true}) // the directory only: the file may be damaged
	if err != nil {
		return fmt.Errorf("state dir %s: %w", dir, err)
	}
	ctx, cancel := passContext(c.Context, c.Duration("timeout"))
	defer cancel()
	unlock, held, err := st.LockReconcile(true, c.Duration("timeout"))
	if err != nil || !held {
		return fmt.Errorf("taking the reconcile lock %s: %v", st.ReconcileLockPath(), cmpErr(err, "held too long by another process"))
	}
	defer unlock()
	out, err := rebuild(ctx, c, st, in, c.Bool("force"))
	if err != nil {
		return err
	}
	if err := render(c, out, func(t *table) { rebuiltRows(t, out) }); err != nil {
		return err
	}
	if len(out.Failed) > 0 {
		return fmt.Errorf("state rebuild: %d problems: %v", len(out.Failed), out.Failed)
	}
	return nil
}

func cmpErr(err error, otherwise string) any {
	if err != nil {
		return err
	}
	return otherwise
}

// rebuild reads the kernel first (the pods as they run), moves the old file
// aside, then adopts EC2's truth and restores the pods in one transaction.
func rebuild(ctx context.Context, c *cli.Context, st *store.Store, in settings.Inputs, force bool) (*Rebuilt, error) {
	switch err := st.CheckFile(); {
	case err == nil && !force:
		return nil, fmt.Errorf("%s is sound (vpcctl doctor checks it); use --force to rebuild it anyway", st.Path())
	case err != nil && !errors.Is(err, store.ErrDamaged) && !errors.Is(err, store.ErrNotInitialized) && !force:
		return nil, fmt.Errorf("%w; use --force to move it aside and rebuild", err)
	}
	prefix, err := vethPrefix(in) // the veths the plugin named with the knob
	if err != nil {
		return nil, err
	}
	wired, err := netns.DiscoverPodsWith(prefix)
	if err != nil {
		return nil, fmt.Errorf("reading the pods' wiring from the kernel: %w", err)
	}
	cache := readCNICache(filepath.Join(c.String("cni-cache-dir"), "results"))
	out := &Rebuilt{Pods: []RebuiltPod{}}
	if out.MovedAside, err = moveAside(st.Path()); err != nil {
		return nil, err
	}
	runner, err := newRunner(ctx, st, in)
	if err != nil {
		return out, classifyRunError(ctx, err)
	}
	now := time.Now()
	rep, err := runner.Adopt(ctx, func(tx *store.Tx) error {
		out.Pods, out.Failed = out.Pods[:0], nil
		for _, w := range wired {
			out.restore(tx, w, cache, now)
		}
		snap, err := tx.Snapshot()
		for _, e := range snap.ENIs {
			out.ENIs++
			for _, b := range e.Blocks {
				out.Addresses += len(b.Addrs)
			}
		}
		return err
	})
	if rep != nil {
		out.Calls = rep.Calls
		for _, f := range rep.Findings {
			out.Findings = append(out.Findings, f.Message)
		}
		out.Failed = append(out.Failed, rep.Failed...)
	}
	return out, err
}

// restore records one pod interface the kernel shows.
func (out *Rebuilt) restore(tx *store.Tx, w netns.PodWiring, cache []cniCached, now time.Time) {
	p := RebuiltPod{IP: w.IP.String(), HostVeth: w.HostVeth, Netns: w.Netns}
	defer func() { out.Pods = append(out.Pods, p) }()
	if !w.IP.IsValid() {
		p.Note = "no /32 route through it: a leftover, not restored (vpcctl gc removes it)"
		return
	}
	a := store.Assignment{IP: w.IP, HostVeth: w.HostVeth, Netns: w.Netns, IfName: w.IfName}
	if a.IfName == "" {
		a.IfName = "eth0"
	}
	if hit, ok := matchCache(cache, w); ok {
		a.ContainerID, a.IfName, a.Network = hit.ContainerID, hit.IfName, hit.NetworkName
		a.PodNamespace, a.PodName, a.PodUID = hit.arg("K8S_POD_NAMESPACE"), hit.arg("K8S_POD_NAME"), hit.arg("K8S_POD_UID")
		p.Pod = a.PodNamespace + "/" + a.PodName
	} else {
		// No container ID: the runtime's DEL cannot find this one, and the
		// runtime's GC must not release it; gc does when its netns goes.
		a.ContainerID, a.Network = "unknown-"+w.HostVeth, rebuiltNetwork
		p.Note = "no CNI cache entry names it: container ID unknown, kept until its namespace goes"
	}
	if w.Netns == "" {
		p.Note = "its namespace was not found; " + p.Note
	}
	a.Key = store.AssignmentKey(a.ContainerID, a.IfName)
	p.Key = a.Key
	if _, err := tx.Restore(a, now); err != nil {
		out.Failed = append(out.Failed, fmt.Sprintf("%s (%s): %v", a.Key, w.IP, err))
		p.Note = "not restored: " + err.Error()
	}
}

// rebuiltNetwork marks assignments whose network the rebuild could not
// learn, so the plugin's GC (which releases its own network's assignments
// the runtime does not list) leaves them alone.
const rebuiltNetwork = "vpc-cni-rebuild-unknown"

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

func rebuiltRows(t *table, out *Rebuilt) {
	if out.MovedAside != "" {
		t.row("MOVED ASIDE", out.MovedAside, "", "")
	}
	t.row("FROM EC2", fmt.Sprintf("%d ENIs, %d addresses", out.ENIs, out.Addresses), "", "")
	t.row("POD", "IP", "KEY", "NOTE")
	for _, p := range out.Pods {
		t.row(cmpStr(p.Pod, p.HostVeth), p.IP, p.Key, p.Note)
	}
	for _, f := range out.Failed {
		t.row("FAILED", f, "", "")
	}
}

func cmpStr(a, b string) string {
	if a != "" && a != "/" {
		return a
	}
	return b
}
