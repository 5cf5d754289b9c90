package commands

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/netns"
)

// simPingCommand checks pod connectivity without a ping binary (the demo
// runs it inside pod namespaces).
func simPingCommand() *cli.Command {
	return &cli.Command{
		Name:      "ping",
		Usage:     "send ICMP echoes to an address from this network namespace (needs CAP_NET_RAW)",
		ArgsUsage: "ADDRESS",
		UsageText: "ip netns exec POD vpcctl sim ping 100.64.0.6",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "count", Aliases: []string{"c"}, Value: 3, Usage: "echoes to send"},
			&cli.DurationFlag{Name: "timeout", Value: 2 * time.Second, Usage: "wait per echo"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("sim ping: give exactly one address")
			}
			dst, err := netip.ParseAddr(c.Args().First())
			if err != nil || !dst.Is4() {
				return usagef("sim ping: %q is not an IPv4 address", c.Args().First())
			}
			for i := 0; i < c.Int("count"); i++ {
				rtt, err := netns.Ping(dst, c.Duration("timeout"))
				if err != nil {
					return fmt.Errorf("ping %s: %w", dst, err)
				}
				fmt.Fprintf(c.App.Writer, "reply from %s: time=%s\n", dst, rtt.Round(time.Microsecond))
			}
			return nil
		},
	}
}
