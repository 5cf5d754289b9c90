package pool

import "time"

// PickAddress chooses the address for a new pod and returns where it is:
// s.ENIs[eniIndex].Blocks[blockIndex].Addrs[addrIndex]. It takes the lowest
// device-index Ready ENI first, then the lowest block, then the lowest
// address, so pods pack onto low ENIs and high ones drain and can be returned.
// Only a Free address, or a Cooling one whose cooldown has passed, in a block
// that is not Releasing, is chosen. ok is false when there is none.
func PickAddress(s Snapshot, now time.Time, cooldown time.Duration) (eniIndex, blockIndex, addrIndex int, ok bool) {
	return pickFrom(s, now, cooldown, 0, "")
}

// PickPodAddress is PickAddress under the whole configuration: with custom
// networking nothing on the primary ENI is chosen, even before the
// reconciler has marked it not ready; only the ENIs of the pool of
// c.Profile are chosen from, and none whose groups drifted.
func PickPodAddress(s Snapshot, now time.Time, c Config) (eniIndex, blockIndex, addrIndex int, ok bool) {
	return pickFrom(s, now, c.Cooldown, FirstPodDevice(c), c.Profile)
}

// FirstPodDevice is the lowest device index whose addresses pods may have:
// 1 under custom networking (the primary ENI carries no pods), else 0. The
// store's take skips the lower devices with one seek of its avail index.
func FirstPodDevice(c Config) int {
	if c.CustomNetworking {
		return 1
	}
	return 0
}

func pickFrom(s Snapshot, now time.Time, cooldown time.Duration, firstDevice int, p Pool) (eniIndex, blockIndex, addrIndex int, ok bool) {
	for _, e := range deviceOrder(s.ENIs) {
		eni := &s.ENIs[e]
		if !eni.Ready || eni.NotOurs() || eni.Card != 0 || eni.DeviceIndex < firstDevice ||
			!eni.ServesPool(p) || eni.GroupsDrift != "" {
			continue
		}
		for b := range eni.Blocks {
			blk := &eni.Blocks[b]
			if blk.Releasing {
				continue
			}
			for a := range blk.Addrs {
				if Usable(blk.Addrs[a], now, cooldown) {
					return e, b, a, true
				}
			}
		}
	}
	return 0, 0, 0, false
}

// deviceOrder lists the ENI indexes by ascending device index. The snapshot
// is normally sorted already; an unsorted one still gives the same answer.
func deviceOrder(enis []ENI) []int {
	order := make([]int, len(enis))
	for i := range order {
		order[i] = i
	}
	// Insertion sort: a handful of ENIs, usually already in order.
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && enis[order[j]].DeviceIndex < enis[order[j-1]].DeviceIndex; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	return order
}
