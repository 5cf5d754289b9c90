package netns

import "testing"

func TestHostVethNameMatchesTheReference(t *testing.T) {
	cases := []struct{ ns, name, id, want string }{
		// sha1("default.nginx") = c440f455693b…, as `printf default.nginx | sha1sum`
		{"default", "nginx", "", "enic440f455693"},
		{"kube-system", "coredns-5d78c9869d-abcde", "cid", "eni4d5f75c480c"},
		// no pod identity: sha1("abc123") = 6367c48dd193…
		{"", "", "abc123", "eni6367c48dd19"},
	}
	for _, c := range cases {
		if got := HostVethNameFor(c.ns, c.name, c.id); got != c.want {
			t.Errorf("HostVethNameFor(%q, %q, %q) = %q, want %q", c.ns, c.name, c.id, got, c.want)
		}
		if len(c.want) > 15 {
			t.Errorf("%q exceeds IFNAMSIZ", c.want)
		}
	}
	if HostVethName("default", "nginx") != "enic440f455693" {
		t.Error("HostVethName differs from HostVethNameFor")
	}
}

func TestRandomMACIsLocallyAdministeredUnicast(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		mac := randomMAC()
		if mac[0]&0x02 == 0 || mac[0]&0x01 != 0 {
			t.Fatalf("MAC %s is not locally administered unicast", mac)
		}
		seen[mac.String()] = true
	}
	if len(seen) < 200 {
		t.Errorf("only %d distinct MACs in 200", len(seen))
	}
}
