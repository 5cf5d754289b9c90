package commands

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/internal/awsnode"
	"vpc-cni/internal/printers"
	"vpc-cni/migrate"
	"vpc-cni/pass"
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

Stop aws-node on the node first (see docs/migrating.md); write this
plugin's conflist after. Refused, with nothing changed: a malformed checkpoint or one of an unknown
version, addresses EC2 does not list on the node's ENIs, and a state that already has assignments
(unless --force). A second run finds the pods recorded and changes nothing.

With --aws-node-env FILE it carries aws-node's configuration instead, and touches no pod or state:
it reads the aws-node container's env from the DaemonSet (as kubectl -n kube-system get ds aws-node
-o yaml prints it) or from KEY=VALUE lines, writes the equivalent --config file (0644, atomically)
and names every variable: written, dropped (this design does it another way, or aws-node's default
that vpc-cni already behaves as) or stopping the migration (it would change what the node does:
exit 2 unless --force). Run it before the pods' migration, so the first pass acts on the knobs.

Examples:
   kubectl -n kube-system get ds aws-node -o yaml > aws-node.yaml
   vpcctl migrate --from-aws-node --aws-node-env aws-node.yaml --dry-run
   vpcctl migrate --from-aws-node --aws-node-env aws-node.yaml
   vpcctl migrate --from-aws-node --dry-run
   vpcctl migrate --from-aws-node
   vpcctl migrate --from-aws-node --checkpoint /host/var/run/aws-node/ipam.json -o json`,
		Flags: []cli.Flag{
			configFlag(),
			&cli.BoolFlag{Name: "from-aws-node", Usage: "migrate from amazon-vpc-cni-k8s (required: the only source)"},
			&cli.StringFlag{Name: "checkpoint", Value: awsnode.DefaultPath, Usage: "the reference's IPAM checkpoint"},
			&cli.StringFlag{Name: "aws-node-env", Usage: "carry aws-node's configuration instead: write the --config `FILE` " +
				"equivalent to this DaemonSet (kubectl -n kube-system get ds aws-node -o yaml) or KEY=VALUE lines"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print what would be adopted and change nothing"},
			&cli.BoolFlag{Name: "force", Usage: "migrate even though the state already has assignments " +
				"(--aws-node-env: drop the variables that stop it, replace a different config file)"},
			&cli.DurationFlag{Name: "timeout", Value: 2 * time.Minute, Usage: "deadline for the whole migration"},
			outputFlag("table"),
		},
		Before: noArgs,
		Action: migrateAction,
	}
}

func migrateAction(c *cli.Context) error {
	if _, err := format(c); err != nil {
		return err
	}
	if !c.Bool("from-aws-node") {
		return usagef("migrate: say where from: --from-aws-node (the only source)")
	}
	if c.IsSet("aws-node-env") {
		return migrateConfigAction(c)
	}
	pods, err := migrate.ReadCheckpoint(c.String("checkpoint"))
	if err != nil {
		return err
	}
	s, err := openSession(c, writable)
	if err != nil {
		return err
	}
	ctx, release, err := pass.Exclusive(c.Context, s.st, c.Duration("timeout"))
	if err != nil {
		return err
	}
	defer release()
	runner, err := runnerFor(ctx, s.st, s.in)()
	if err != nil {
		return err
	}
	out, err := migrate.Run(ctx, runner, pods, migrate.Options{Checkpoint: c.String("checkpoint"),
		DryRun: c.Bool("dry-run"), Force: c.Bool("force")})
	return renderMigrated(c, out, err)
}

// renderMigrated: a failure before the plan (IMDS, EC2, the store) leaves
// nothing worth a table; a refusal's table names every problem.
func renderMigrated(c *cli.Context, out *migrate.Report, err error) error {
	if err == nil || len(out.Failed) > 0 {
		if rerr := render(c, out, func(t *printers.Table) { out.Rows(t) }); err == nil {
			err = rerr
		}
	}
	if err == nil && len(out.Failed) > 0 {
		err = fmt.Errorf("migrate: %s: %v", printers.Plural(len(out.Failed), "problem", "problems"), out.Failed)
	}
	return err
}
