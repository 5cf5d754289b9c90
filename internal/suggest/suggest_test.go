package suggest

import "testing"

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"abc", "", 3}, {"", "ab", 2}, {"kitten", "sitting", 3}, {"ip-targte", "ip-target", 2}, {"same", "same", 0}} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestClosest(t *testing.T) {
	keys := []string{"WARM_IP_TARGET", "WARM_ENI_TARGET", "MAX_ENI"}
	if got := Closest("WARM_IP_TARGTE", keys, 3); got != "WARM_IP_TARGET" {
		t.Errorf("got %q", got)
	}
	if got := Closest("NOTHING_LIKE_IT", keys, 3); got != "" {
		t.Errorf("a far word got %q", got)
	}
	if got := Closest("MAX_EN", keys, 0); got != "" {
		t.Errorf("maxDistance 0 still suggested %q", got)
	}
}
