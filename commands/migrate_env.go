package commands

import (
	"github.com/urfave/cli/v2"

	"vpc-cni/internal/printers"
	"vpc-cni/migrate"
)

// migrateConfigAction is `migrate --from-aws-node --aws-node-env FILE`:
// aws-node's env to the config file. A refusal prints the report (every
// variable's note) before its exit 2.
func migrateConfigAction(c *cli.Context) error {
	f, err := format(c)
	if err != nil {
		return err
	}
	src := c.String("aws-node-env")
	env, err := migrate.ReadAWSNodeEnv(src)
	if err != nil {
		return err
	}
	path, _ := innermostFlag(c, "config")
	out, err := migrate.MigrateConfig(env.Vars, migrate.ConfigOptions{Source: src, Path: path,
		DryRun: c.Bool("dry-run"), Force: c.Bool("force"), Agent: env.Agent})
	if rerr := render(c, out, func(t *printers.Table) { out.Rows(t) }); err == nil {
		err = rerr
	}
	if err == nil && out.DryRun && f != "json" && f != "yaml" { // the JSON carries it as "config"
		_, err = c.App.Writer.Write([]byte("\n" + out.Config))
	}
	return err
}
