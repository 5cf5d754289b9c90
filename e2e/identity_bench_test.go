package e2e

import "testing"

// What the identity check costs the plugin, through the shipped binary:
// STATUS and ADD (then DEL, untimed) on a node confirmed in this boot (a
// boot ID file read), and STATUS after a boot, when the process asks IMDS
// itself (instance-id and mac) and records the boot. Run with -benchtime
// 50x or more; compare with the same benchmark on the commit before.
func BenchmarkIdentityCheck(b *testing.B) {
	w := newWorld(b, worldOpts{env: []string{"WARM_IP_TARGET=3", "IP_COOLDOWN_PERIOD=0"}})
	p := w.newPod("bench")
	conf := mustJSON(b, w.conf(nil))
	status := []string{"CNI_COMMAND=STATUS", "CNI_PATH=" + binDir}
	var st, add, afterBoot samples
	for b.Loop() {
		st.timed(b, func() run { return w.execInNode(bin("vpc-cni"), status, conf) })
		add.timed(b, func() run { return w.execInNode(bin("vpc-cni"), p.env("ADD"), conf) })
		b.StopTimer()
		w.execInNode(bin("vpc-cni"), p.env("DEL"), conf)
		w.setNodeField("confirmedBoot", "a-boot-before")
		b.StartTimer()
		afterBoot.timed(b, func() run { return w.execInNode(bin("vpc-cni"), status, conf) })
	}
	st.report(b, "status")
	add.report(b, "add")
	afterBoot.report(b, "status-after-boot")
}
