package netns

import "testing"

// TestRouteTableNumbersSecondaryENIsFromTwo: the primary ENI's pods route
// through main (0); a secondary ENI at device index d owns table d+1.
func TestRouteTableNumbersSecondaryENIsFromTwo(t *testing.T) {
	for dev, want := range map[int]int{0: 0, 1: 2, 2: 3, 14: 15} {
		if got := RouteTable(dev); got != want {
			t.Errorf("RouteTable(%d) = %d, want %d", dev, got, want)
		}
	}
}
