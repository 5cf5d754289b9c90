package commands

import (
	"cmp"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/internal/printers"
	"vpc-cni/pass"
	"vpc-cni/rebuild"
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
so the runtime's DEL finds the pod; else the host veth's alias names it (vpc-cni/<network>/
<container ID>/<interface>: an ADD still under way). A pod neither names keeps its address under
the key "unknown-<host veth>/<interface>" until its namespace goes (vpcctl gc releases it then).
Running pods keep their addresses. A sound state file is left alone unless --force.

Examples:
   vpcctl doctor                 # says whether the file is damaged
   vpcctl state rebuild
   vpcctl state rebuild --cni-cache-dir /var/lib/cni -o json`,
			Flags: []cli.Flag{
				cniCacheDirFlag(),
				&cli.BoolFlag{Name: "force", Usage: "rebuild even if the state file is sound"},
				&cli.DurationFlag{Name: "timeout", Value: 2 * time.Minute, Usage: "deadline for the whole rebuild"},
				outputFlag("table"),
			},
			Before: noArgs,
			Action: rebuildAction,
		}},
	}
}

func cniCacheDirFlag() cli.Flag {
	return &cli.StringFlag{Name: "cni-cache-dir", Value: defaultCNICacheDir, Usage: "the runtime's CNI cache (results/ under it)"}
}

// defaultCNICacheDir is containerd's and CRI-O's CNI cache.
const defaultCNICacheDir = "/var/lib/cni"

// cniCacheDir is --cni-cache-dir, or the default for the commands that
// rebuild lost state without the flag (pool warm, install).
func cniCacheDir(c *cli.Context) string { return cmp.Or(c.String("cni-cache-dir"), defaultCNICacheDir) }

func rebuildAction(c *cli.Context) error {
	s, err := start(c, lazy)
	if err != nil {
		return err
	}
	ctx, release, err := pass.Exclusive(c.Context, s.st, c.Duration("timeout"))
	if err != nil {
		return err
	}
	defer release()
	prefix, err := vethPrefix(s.in)
	if err != nil {
		return err
	}
	out, err := rebuild.Run(ctx, s.st, rebuild.Options{CNICacheDir: cniCacheDir(c), Force: c.Bool("force"),
		VethPrefix: prefix, NewRunner: runnerFor(ctx, s.st, s.in)})
	if err != nil {
		return err
	}
	if err := render(c, out, func(t *printers.Table) { out.Rows(t) }); err != nil {
		return err
	}
	if len(out.Failed) > 0 {
		return fmt.Errorf("state rebuild: %s: %v", printers.Plural(len(out.Failed), "problem", "problems"), out.Failed)
	}
	return nil
}
