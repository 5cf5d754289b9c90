package commands

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"vpc-cni/internal/printers"
	"vpc-cni/maxpods"
)

func maxPodsCommand() *cli.Command {
	return &cli.Command{
		Name:  "max-pods",
		Usage: "print the pods this node can hold: the value for the kubelet's maxPods",
		Description: `Online (the default) from the node's state as the last reconcile left it (its limits, and the
ENIs that are not vpc-cni's) and the knobs as every vpc-cni process reads them; offline with
--instance-type from the built-in instance table and --config. Secondary IPs: ENIs x (IPv4 per
ENI - 1) + 2, as eni-max-pods.txt; prefix delegation: 16 addresses a slot, capped at MAX_PODS_CAP
(default EKS's 110, or 250 above 30 vCPUs); IPv6: the cap. Custom networking leaves the primary
ENI out; MAX_ENI is honoured. -o json also gives the values for Karpenter's EC2NodeClass and
nodeadm's NodeConfig. --write-kubelet-dropin writes a KubeletConfiguration drop-in for the
kubelet's --config-dir (vpc-cni-max-pods.service does at boot, with --from-imds: for the instance
IMDS names, so a state dir baked into an image or copied from another node never gives another
type's value).
Exit codes: 0 done, 1 failed (no reconcile has run yet), 2 bad usage or configuration.

Examples:
   vpcctl max-pods
   vpcctl max-pods --instance-type m5.large --config /etc/vpc-cni/config -o json
   vpcctl max-pods --from-imds --write-kubelet-dropin /etc/kubernetes/kubelet.conf.d/40-vpc-cni-max-pods.conf`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "instance-type", Usage: "offline: this instance `TYPE` from the built-in table, not the node's state"},
			&cli.BoolFlag{Name: "from-imds", Usage: "for the instance IMDS names: the node's state only when it is this instance's, else the built-in table for IMDS's instance type (the boot unit's way: a state dir from an image or another node holds another type)"},
			&cli.StringFlag{Name: "write-kubelet-dropin", Usage: "also write the kubelet drop-in with maxPods to `FILE` (unchanged when it already says so)"},
			outputFlag("table"),
		},
		Before: noArgs,
		Action: func(c *cli.Context) error {
			rep, err := maxPodsReport(c)
			if err != nil {
				return err
			}
			if path := c.String("write-kubelet-dropin"); path != "" {
				changed, err := maxpods.WriteDropIn(path, rep.MaxPods)
				if err != nil {
					return err
				}
				fmt.Fprintf(c.App.ErrWriter, "%s %s: maxPods %d\n", map[bool]string{true: "wrote", false: "unchanged"}[changed], path, rep.MaxPods)
			}
			return render(c, rep, func(t *printers.Table) { rep.Rows(t, c.String("output") == "wide") })
		},
	}
}

// maxPodsReport is the offline report with --instance-type, IMDS's
// instance's with --from-imds, else the node's.
func maxPodsReport(c *cli.Context) (maxpods.Report, error) {
	if _, err := format(c); err != nil {
		return maxpods.Report{}, err
	}
	if c.String("instance-type") == "" && !c.Bool("from-imds") {
		s, err := start(c, readOnly)
		if err != nil {
			return maxpods.Report{}, err
		}
		return maxpods.Online(s.st, s.in)
	}
	in, err := knobInputs(c)
	if err != nil {
		return maxpods.Report{}, err
	}
	if typ := c.String("instance-type"); typ != "" {
		return maxpods.Offline(typ, in)
	}
	return maxpods.ThisInstanceAt(c.Context, stateDir(c), in)
}
