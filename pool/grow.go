package pool

import "fmt"

// growActions spends d.units on the lowest device-index ENIs first: one
// Assign per existing ENI with free slots (ready or not), then new ENIs
// created with their addresses at the lowest unused device indexes.
func (p *policy) growActions(t *tally, d demand) []Action {
	var acts []Action
	why := p.why(t, d)
	left, seen := d.units, 0
	for i := range t.enis {
		e := &t.enis[i]
		if left == 0 || seen >= d.eniLimit {
			break
		}
		seen++
		n := min(max(p.perENI-e.slots, 0), left)
		if n == 0 || e.pos < 0 || e.noGrow {
			continue
		}
		left -= n
		acts = append(acts, Action{
			Kind: Assign, ENIID: e.id, DeviceIndex: e.device, Count: n, Prefixes: p.prefixes(),
			Reason: fmt.Sprintf("%s; assign %d %s on %s", why, n, p.unitName(), e.id),
		})
	}
	for dev := 1; left > 0 && seen < d.eniLimit; dev++ {
		if t.usesDevice(dev) {
			continue
		}
		seen++
		n := min(p.perENI, left)
		left -= n
		acts = append(acts, Action{
			Kind: CreateENI, DeviceIndex: dev, Count: n, Prefixes: p.prefixes(),
			Reason: fmt.Sprintf("%s; create an ENI at device %d with %d %s", why, dev, n, p.unitName()),
		})
	}
	return acts
}

func (t *tally) usesDevice(dev int) bool {
	for i := range t.enis {
		if t.enis[i].device == dev {
			return true
		}
	}
	return false
}
