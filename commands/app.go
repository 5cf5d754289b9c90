// Package commands is the thin glue between the command line (or the CNI
// runtime) and the packages that do the work: flags, output formats, exit codes.
package commands

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/urfave/cli/v2"

	"vpc-cni/internal/logfile"
	"vpc-cni/store"
)

// Run runs the admin CLI and returns the process exit code.
func Run(args []string) int {
	return runWith(args, os.Stdout, os.Stderr)
}

func runWith(args []string, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	err := app.Run(args)
	if err != nil {
		fmt.Fprintf(stderr, "vpcctl: %v\n", err)
	}
	return exitCode(err)
}

func newApp(stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:                 "vpcctl",
		Usage:                "daemonless VPC IP address management for Kubernetes nodes on EC2",
		Description:          appDescription,
		Writer:               stdout,
		ErrWriter:            stderr,
		EnableBashCompletion: true,
		Suggest:              true,
		HideVersion:          true,
		Flags:                globalFlags(),
		Commands: []*cli.Command{
			poolCommand(),
			reconcileCommand(),
			gcCommand(),
			maxPodsCommand(),
			eventsCommand(),
			metricsCommand(),
			installCommand(),
			uninstallCommand(),
			doctorCommand(),
			stateCommand(),
			migrateCommand(),
			nodeRulesCommand(),
			simCommand(),
			versionCommand(),
			completionCommand(),
		},
		CommandNotFound: func(c *cli.Context, name string) {
			// Reported through the exit path so that scripts see exit 2;
			// suggestions come from the level the name was given at.
			c.App.Metadata["notFound"] = name
			c.App.Metadata["notFoundAmong"] = siblings(c)
		},
		OnUsageError: onUsageError,
	}
	app.Metadata = map[string]any{}
	markUsageErrors(app.Commands)
	acceptGlobalFlags(app.Commands, app.Flags)
	app.After = func(c *cli.Context) error {
		if name, ok := c.App.Metadata["notFound"].(string); ok {
			among, _ := c.App.Metadata["notFoundAmong"].([]*cli.Command)
			return usagef("unknown command %q%s; see 'vpcctl --help'", name, commandSuggestion(among, name))
		}
		return nil
	}
	return app
}

// siblings are the commands at the level c parses: a command's subcommands,
// or the app's commands at the top.
func siblings(c *cli.Context) []*cli.Command {
	if c.Command != nil && len(c.Command.Subcommands) > 0 {
		return c.Command.Subcommands
	}
	return c.App.Commands
}

const appDescription = `One static binary: installed as /opt/cni/bin/vpc-cni it is the CNI plugin that kubelet runs
for every pod; under any other name it is this admin CLI. Node state lives in one bbolt file
(--state-dir); reconciliation with EC2 is a short process run by a timer, by the CLI, or by the
plugin when the pool runs low.

Examples:
   vpcctl pool status                  # the warm pool, its targets and where each came from
   vpcctl pool status -o json          # the same for scripts
   vpcctl pool warm --ip-target 5      # keep exactly 5 free addresses (persisted), reconcile now
   vpcctl reconcile --dry-run          # show the plan and the EC2 calls it would make
   vpcctl sim serve --instance-type t3.small   # an EC2/IMDS emulator on loopback`

func globalFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{
			Name: "state-dir", Value: store.DefaultDir, EnvVars: []string{"VPC_CNI_STATE_DIR"},
			Usage: "directory of the node state (state.db) and the reconcile lock",
		},
		configFlag(),
		&cli.StringFlag{
			Name: "log-level", Value: "warn", EnvVars: []string{"VPC_CNI_LOG_LEVEL"},
			Usage: "debug, info, warn or error (logs go to stderr)",
		},
		&cli.StringFlag{
			Name: "log-format", Value: logfile.FormatText, EnvVars: []string{"VPC_CNI_LOG_FORMAT"},
			Usage: "text or json (one JSON object per line) for the logs on stderr",
		},
	}
}

// acceptGlobalFlags lets every command take the global flags after its name
// too (vpcctl max-pods --config F), as kubectl and crictl do: each command
// declares them again, without a default, unless it has its own; the
// innermost one given wins (innermostFlag). Logging is set up once the
// command's own flags are parsed.
func acceptGlobalFlags(cmds []*cli.Command, globals []cli.Flag) {
	for _, cmd := range cmds {
		has := flagNames(cmd.Flags)
		for _, g := range globals {
			if name := namesOf(g)[0]; !has[name] {
				cmd.Flags = append(cmd.Flags, &cli.StringFlag{Name: name, Usage: "the same as the global --" + name})
			}
		}
		if has["output"] && !has["no-headers"] {
			cmd.Flags = append(cmd.Flags, &cli.BoolFlag{Name: "no-headers", Usage: "print tables without their header rows"})
		}
		cmd.Before = chainBefore(setupLogging, cmd.Before)
		acceptGlobalFlags(cmd.Subcommands, globals)
	}
}

// flagNames is the set of the flags' names and aliases.
func flagNames(fs []cli.Flag) map[string]bool {
	names := map[string]bool{}
	for _, f := range fs {
		for _, n := range namesOf(f) {
			names[n] = true
		}
	}
	return names
}

// namesOf is f.Names() without its cost for the kinds of flag vpcctl
// declares: urfave/cli cleans every name with a regular expression (of
// a v1-style "name, alias" it keeps "name"), 3,000 instructions a name,
// and every vpcctl start asks for all of them here. vpcctl's names are
// clean (TestFlagNamesAreClean).
func namesOf(f cli.Flag) []string {
	switch f := f.(type) {
	case *cli.StringFlag:
		return append([]string{f.Name}, f.Aliases...)
	case *cli.BoolFlag:
		return append([]string{f.Name}, f.Aliases...)
	case *cli.DurationFlag:
		return append([]string{f.Name}, f.Aliases...)
	case *cli.IntFlag:
		return append([]string{f.Name}, f.Aliases...)
	case *cli.StringSliceFlag:
		return append([]string{f.Name}, f.Aliases...)
	}
	return f.Names()
}

func chainBefore(first, then cli.BeforeFunc) cli.BeforeFunc {
	if then == nil {
		return first
	}
	return func(c *cli.Context) error {
		if err := first(c); err != nil {
			return err
		}
		return then(c)
	}
}

func setupLogging(c *cli.Context) error {
	name, _ := innermostFlag(c, "log-level")
	var level slog.Level
	if err := level.UnmarshalText([]byte(name)); err != nil {
		return usagef("--log-level %q: must be debug, info, warn or error", name)
	}
	logFormat, _ := innermostFlag(c, "log-format")
	if err := logfile.CheckFormat(logFormat); err != nil {
		return usagef("--log-format %v", err)
	}
	slog.SetDefault(slog.New(logfile.NewHandler(c.App.ErrWriter, logFormat, level)))
	return nil
}

// jsonLogs says whether the logs are JSON lines, so a line that would
// otherwise be plain text on stderr goes through slog too.
func jsonLogs(c *cli.Context) bool {
	f, _ := innermostFlag(c, "log-format")
	return f == logfile.FormatJSON
}

// stderrLine writes msg on stderr: "vpcctl: msg", or with JSON logs a
// record of level whatever --log-level says (as the plain line is), so a
// log reader parses every line.
func stderrLine(c *cli.Context, level slog.Level, msg string) {
	if !jsonLogs(c) {
		fmt.Fprintln(c.App.ErrWriter, "vpcctl: "+msg)
		return
	}
	h := logfile.NewHandler(c.App.ErrWriter, logfile.FormatJSON, level)
	slog.New(h).Log(context.Background(), level, msg)
}

// onUsageError makes flag errors exit 2, names the flag the user probably
// meant, and says how to write a duration.
func onUsageError(c *cli.Context, err error, isSubcommand bool) error {
	if fixed := explainFlagError(c, err); fixed != nil {
		return fixed
	}
	return asUsage(err)
}

// markUsageErrors makes flag errors of every (sub)command exit 2.
func markUsageErrors(cmds []*cli.Command) {
	for _, cmd := range cmds {
		cmd.OnUsageError = onUsageError
		markUsageErrors(cmd.Subcommands)
	}
}

// positional rejects stray arguments, which urfave/cli would otherwise ignore.
func noArgs(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("%s: unexpected argument %q", c.Command.FullName(), c.Args().First())
	}
	return nil
}
