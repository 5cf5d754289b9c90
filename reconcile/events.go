package reconcile

import (
	"fmt"
	"net/netip"
	"strings"

	"vpc-cni/internal/printers"
	"vpc-cni/pool"
)

// Plural is "1 address", "3 addresses": the one home for counted nouns in
// messages.
func Plural(n int, one, many string) string { return printers.Plural(n, one, many) }

// actionEvent is the event of one EC2 action: its ENI (a new ENI's ID
// once EC2 made it), the addresses or prefixes, the reason and the outcome.
func actionEvent(res result) string {
	eni, what := res.ENIID, ""
	switch {
	case res.Kind == pool.CreateENI && res.Created != nil:
		eni = res.Created.ID
		what = fmt.Sprintf("device %d, %s", res.Created.DeviceIndex, blockList(truthBlocks(*res.Created)))
	case res.Kind == pool.CreateENI:
		eni = "(none created)"
		what = fmt.Sprintf("device %d, asked for %s", res.DeviceIndex, unitCount(res.Count, res.Prefixes))
	case res.Kind == pool.Assign && res.Done:
		what = blockList(res.Blocks)
	case res.Kind == pool.Assign:
		what = "asked for " + unitCount(res.Count, res.Prefixes)
	default: // unassign, delete-eni: the blocks given back
		what = blockList(res.Release)
	}
	outcome := "ok"
	if res.Err != nil {
		outcome = "failed: " + res.Err.Error()
	}
	return fmt.Sprintf("%s %s: %s; reason: %s; outcome: %s", res.Kind, eni, what, res.Reason, outcome)
}

func unitCount(n int, prefixes bool) string {
	if prefixes {
		return Plural(n, "/28 prefix", "/28 prefixes")
	}
	return Plural(n, "address", "addresses")
}

// blockList is "2 addresses (100.64.0.5, 100.64.0.6)" or "1 /28 prefix (...)".
func blockList(blocks []netip.Prefix) string {
	var ips, prefixes []string
	for _, b := range blocks {
		if b.Bits() == 32 {
			ips = append(ips, b.Addr().String())
		} else {
			prefixes = append(prefixes, b.String())
		}
	}
	var parts []string
	if len(ips) > 0 {
		parts = append(parts, fmt.Sprintf("%s (%s)", Plural(len(ips), "address", "addresses"), strings.Join(ips, ", ")))
	}
	if len(prefixes) > 0 {
		parts = append(parts, fmt.Sprintf("%s (%s)", Plural(len(prefixes), "/28 prefix", "/28 prefixes"), strings.Join(prefixes, ", ")))
	}
	if len(parts) == 0 {
		return "no addresses"
	}
	return strings.Join(parts, " and ")
}
