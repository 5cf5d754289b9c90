package e2e

import (
	"testing"
)

// Older conflists (0.4.0, 1.0.0, the reference's 0.4.0 among them) work
// through a chain: the result converts and portmap accepts it.
func TestPrivilegedSpecVersions(t *testing.T) {
	w := newWorld(t, worldOpts{})
	for _, v := range []string{"0.4.0", "1.0.0"} {
		t.Run(v, func(t *testing.T) {
			list := conflist(w.conf(nil),
				map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}})
			list["cniVersion"] = v
			delete(list, "cniVersions")
			rt := w.runtime(list)
			p := w.newPod("v" + v)
			caps := map[string]any{"portMappings": []map[string]any{{"hostPort": 18180, "containerPort": 80, "protocol": "tcp"}}}
			res, err := rt.add(p, caps)
			if err != nil {
				t.Fatalf("ADD: %v", err)
			}
			w.assertWiring(p, addrOf(t, res.IPs[0].Address.IP), 0)
			if err := rt.check(p, caps); err != nil {
				t.Errorf("CHECK: %v", err)
			}
			if err := rt.del(p, caps); err != nil {
				t.Fatalf("DEL: %v", err)
			}
		})
	}
	w.assertNodeClean()
}
