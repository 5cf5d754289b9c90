package commands

import (
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"vpc-cni/sim/ec2sim"

	"vpc-cni/internal/printers"
)

func simCommand() *cli.Command {
	return &cli.Command{
		Name:  "sim",
		Usage: "the built-in EC2 and IMDS emulator, for trying vpc-cni without an AWS account",
		Subcommands: []*cli.Command{
			simServeCommand(),
			simCallsCommand(),
			simPingCommand(),
			simWhatifCommand(),
		},
	}
}

func simServeCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve EC2 and IMDS for one simulated node on loopback until interrupted",
		Description: `Prints the environment that points vpcctl (or any aws-sdk-go-v2 program) at it.

The ENIs it attaches have a link on this machine only with --link-netns: without it, a pass
sets up no ENI but the primary ("FAILED host setup ... no link with this MAC yet", exit 1) and
doctor reports them not ready. With it (root), run it, and each vpcctl command, in that
namespace: it listens on that namespace's loopback.

Examples:
   vpcctl sim serve --listen 127.0.0.1:8940 --instance-type t3.small --env-file /tmp/sim.env &
   . /tmp/sim.env && vpcctl --state-dir /tmp/vpc reconcile

   ip netns add node1                          # as root: ENIs appear as links in node1
   ip netns exec node1 vpcctl sim serve --link-netns /run/netns/node1 --env-file /tmp/sim.env &
   . /tmp/sim.env && ip netns exec node1 vpcctl --state-dir /tmp/vpc pool warm --ip-target 20`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8940", Usage: "address to listen on (loopback)"},
			&cli.StringFlag{Name: "instance-type", Value: "t3.small", Usage: "the simulated instance's type (limits from the built-in table)"},
			&cli.StringFlag{Name: "subnet-cidr", Value: "100.64.0.0/20", Usage: "the node's subnet, inside 100.64.0.0/10"},
			&cli.StringFlag{Name: "link-netns", Usage: "network namespace path where attached ENIs appear as dummy links (root)"},
			&cli.StringFlag{Name: "env-file", Usage: "also write the environment lines to this file"},
		},
		Before: noArgs,
		Action: simServe,
	}
}

func simServe(c *cli.Context) error {
	subnet, err := netip.ParsePrefix(c.String("subnet-cidr"))
	if err != nil {
		return usagef("--subnet-cidr %q: %v", c.String("subnet-cidr"), err)
	}
	sim, err := ec2sim.New(ec2sim.Config{InstanceType: c.String("instance-type"), SubnetCIDR: subnet,
		LinkNetns: c.String("link-netns")})
	if err != nil {
		return asUsage(err)
	}
	if err := sim.Start(c.String("listen")); err != nil {
		return fmt.Errorf("sim: listening on %s: %w", c.String("listen"), err)
	}
	defer sim.Close()
	var lines strings.Builder
	for _, kv := range sim.Env() {
		fmt.Fprintf(&lines, "export %s\n", kv)
	}
	fmt.Fprint(c.App.Writer, lines.String())
	if f := c.String("env-file"); f != "" {
		if err := os.WriteFile(f, []byte(lines.String()), 0o600); err != nil {
			return fmt.Errorf("sim: writing %s: %w", f, err)
		}
	}
	fmt.Fprintf(c.App.ErrWriter, "vpcctl sim: serving EC2 and IMDS for %s at %s; Ctrl-C to stop\n", c.String("instance-type"), sim.URL())
	if c.String("link-netns") == "" {
		fmt.Fprintln(c.App.ErrWriter, noLinksNote)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
	return nil
}

// noLinksNote is what sim serve says without --link-netns, so a pass's
// failed host setup is not taken for a fault of the node.
const noLinksNote = "vpcctl sim: no --link-netns: the ENIs this emulator attaches have no link on this machine, so every pass " +
	"that attaches one reports \"FAILED host setup ... no link with this MAC yet\" and exits 1, and so does doctor; " +
	"for a whole node, start it under ip netns exec NAME with --link-netns /run/netns/NAME and run each vpcctl command there too"

func simCallsCommand() *cli.Command {
	return &cli.Command{
		Name:  "calls",
		Usage: "show how many calls of each EC2 action (and IMDS) a running emulator served",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "url", EnvVars: []string{"AWS_ENDPOINT_URL_EC2"}, Usage: "the emulator's URL"},
			outputFlag("table"),
		},
		Before: noArgs,
		Action: func(c *cli.Context) error {
			if _, err := format(c); err != nil {
				return err
			}
			if c.String("url") == "" {
				return usagef("sim calls: give --url or set AWS_ENDPOINT_URL_EC2")
			}
			counts, err := ec2sim.FetchCounters(c.String("url"))
			if err != nil {
				return fmt.Errorf("sim calls: %w", err)
			}
			return render(c, counts, func(t *printers.Table) {
				keys := make([]string, 0, len(counts))
				for k := range counts {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				t.Header("ACTION", "CALLS")
				for _, k := range keys {
					t.Row(k, counts[k])
				}
			})
		},
	}
}
