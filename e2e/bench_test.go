package e2e

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"vpc-cni/internal/testenv"
	"vpc-cni/pool"
	"vpc-cni/store"
)

// The benchmarks exec the binaries directly with CNI env vars, as a runtime
// does, and time each whole process. Each compares vpc-cni with the
// reference plugins in the same run, iterations interleaved so drift hits
// both, and reports medians, p99s, their ratio and the peak RSS of one run.
// For stable p99s give them enough iterations:
//
//	go test ./e2e -run '^$' -bench . -benchtime 200x

// samples collects one figure's timings.
type samples struct {
	d []time.Duration
}

// timed runs fn, keeps its wall time, and fails the benchmark if the plugin
// failed.
func (s *samples) timed(b *testing.B, fn func() run) run {
	b.Helper()
	start := time.Now()
	r := fn()
	s.d = append(s.d, time.Since(start))
	if r.err != nil {
		b.Fatalf("plugin failed: %v\nstdout: %s\nstderr: %s", r.err, r.stdout, r.stderr)
	}
	return r
}

func (s *samples) pct(p float64) float64 {
	if len(s.d) == 0 {
		return 0
	}
	d := slices.Clone(s.d)
	slices.Sort(d)
	i := min(len(d)-1, int(p*float64(len(d))))
	return float64(d[i].Microseconds()) / 1000
}

func (s *samples) report(b *testing.B, name string) {
	b.ReportMetric(s.pct(0.5), name+"-p50-ms")
	b.ReportMetric(s.pct(0.99), name+"-p99-ms")
}

// reportRSS reports the peak RSS of one ADD (then DELs it) run under GNU
// time, which forks the plugin from its own small process: a child forked
// straight from the test binary reports the test binary's RSS as its peak,
// since the kernel keeps the high-water mark from before exec.
func (w *world) reportRSS(b *testing.B, metric, path string, conf []byte) {
	const gnuTime = "/usr/bin/time"
	if _, err := os.Stat(gnuTime); err != nil {
		b.Logf("no %s: %s not measured", gnuTime, metric)
		return
	}
	p := w.newPod("rss")
	out := filepath.Join(b.TempDir(), "maxrss")
	r := w.execInNode(gnuTime, p.env("ADD"), conf, "-f", "%M", "-o", out, path)
	if r.err != nil {
		b.Fatalf("%s ADD under time: %v %s %s", path, r.err, r.stdout, r.stderr)
	}
	w.execInNode(path, p.env("DEL"), conf)
	text, err := os.ReadFile(out)
	if err != nil {
		b.Fatal(err)
	}
	kib, err := strconv.ParseFloat(strings.TrimSpace(string(text)), 64)
	if err != nil {
		b.Fatalf("%s: %q", out, text)
	}
	b.ReportMetric(kib, metric)
}

// rotated runs each contestant once per iteration, in every order in turn:
// a cycle pays for what the one before it left behind (the namespace the
// kernel tears down in the background, under the lock netlink calls take;
// the previous plugin's writes), so a fixed order, or a rotation of one,
// favours whoever always follows the cheapest.
func rotated(b *testing.B, contestants []func()) {
	orders := permutations(len(contestants))
	for i := 0; b.Loop(); i++ {
		for _, j := range orders[i%len(orders)] {
			contestants[j]()
		}
	}
}

// permutations lists every order of 0..n-1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for at := 0; at <= len(p); at++ {
			q := append(append(slices.Clone(p[:at]), n-1), p[at:]...)
			out = append(out, q)
		}
	}
	return out
}

func ratio(b *testing.B, name string, ours, theirs *samples) {
	if theirs.pct(0.5) > 0 {
		b.ReportMetric(ours.pct(0.5)/theirs.pct(0.5), name)
	}
}

// warmWorld is a node with 20 warm addresses that DEL makes reusable at
// once (cooldown 0), so every ADD finds a free address.
func warmWorld(b *testing.B) *world {
	return newWorld(b, worldOpts{instanceType: "c5.4xlarge", env: []string{"WARM_IP_TARGET=20", "IP_COOLDOWN_PERIOD=0"}})
}

// hostLocalIPAM is host-local on its own range, as ptp+host-local nodes use.
func hostLocalIPAM(b *testing.B) map[string]any {
	return map[string]any{"type": "host-local", "dataDir": b.TempDir(),
		"ranges": [][]map[string]string{{{"subnet": "100.127.0.0/16"}}}}
}

// ADD and DEL of a whole pod interface: vpc-cni (warm pool) against ptp +
// host-local. Target: vpc-cni ADD at most 0.6x.
func BenchmarkAddDel(b *testing.B) {
	w := warmWorld(b)
	ours := mustJSON(b, w.conf(nil))
	theirs := mustJSON(b, map[string]any{"cniVersion": "1.1.0", "name": "vpc", "type": "ptp", "mtu": 9001,
		"ipam": hostLocalIPAM(b)})
	var vAdd, vDel, pAdd, pDel, bAdd, bDel samples
	before := beforeBinary(b)
	cycle := func(path string, conf []byte, add, del *samples) {
		b.StopTimer()
		p := w.newPod("bench")
		b.StartTimer()
		add.timed(b, func() run { return w.execInNode(path, p.env("ADD"), conf) })
		del.timed(b, func() run { return w.execInNode(path, p.env("DEL"), conf) })
		b.StopTimer()
		_ = p.ns.Close()
		b.StartTimer()
	}
	rounds := []func(){
		func() { cycle(bin("vpc-cni"), ours, &vAdd, &vDel) },
		func() { cycle(bin("ptp"), theirs, &pAdd, &pDel) },
	}
	if before != "" {
		rounds = append(rounds, func() { cycle(before, ours, &bAdd, &bDel) })
	}
	rotated(b, rounds)
	vAdd.report(b, "vpc-add")
	vDel.report(b, "vpc-del")
	pAdd.report(b, "ptp-add")
	pDel.report(b, "ptp-del")
	ratio(b, "add-ratio", &vAdd, &pAdd)
	ratio(b, "del-ratio", &vDel, &pDel)
	if before != "" {
		ratio(b, "before-add-ratio", &bAdd, &pAdd)
		ratio(b, "before-del-ratio", &bDel, &pDel)
	}
	w.reportRSS(b, "vpc-add-maxrss-KiB", bin("vpc-cni"), ours)
	w.reportRSS(b, "ptp-add-maxrss-KiB", bin("ptp"), theirs)
}

// beforeBinary is VPC_CNI_BENCH_BEFORE: another build of vpcctl (say, of
// the commit before a change) that BenchmarkAddDel runs in the same rounds,
// so a before/after comparison sees the same load. It is linked as vpc-cni
// next to a copy, since the binary acts as the plugin only under that name.
func beforeBinary(b *testing.B) string {
	src := os.Getenv("VPC_CNI_BENCH_BEFORE")
	if src == "" {
		return ""
	}
	data, err := os.ReadFile(src)
	if err != nil {
		b.Fatalf("VPC_CNI_BENCH_BEFORE: %v", err)
	}
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "vpcctl"), data, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.Symlink("vpcctl", filepath.Join(dir, "vpc-cni")); err != nil {
		b.Fatal(err)
	}
	return filepath.Join(dir, "vpc-cni")
}

// Start-up in plugin mode: CNI_COMMAND=VERSION, which does no I/O beyond
// printing, against an empty static Go binary (the floor) and one that only
// links the EC2 and IMDS clients and bbolt (what the plugin cannot drop),
// built with the Makefile's flags. Target: vpc-cni within 1.5x of empty;
// sdkonly-vs-empty shows how much of that budget linking the SDK already
// takes on this machine.
func BenchmarkVersionStartup(b *testing.B) {
	testenv.RequireRoot(b, needsRoot)
	dir := b.TempDir()
	for _, name := range []string{"empty", "sdkonly"} {
		if err := run1(goBinary(), "build", "-trimpath", "-ldflags", "-s -w", "-o", filepath.Join(dir, name),
			"./testdata/startup/"+name); err != nil {
			b.Fatal(err)
		}
	}
	env := []string{"CNI_COMMAND=VERSION"}
	var v, e, s samples
	rotated(b, []func(){
		func() { v.timed(b, func() run { return execHere(bin("vpc-cni"), env, nil) }) },
		func() { e.timed(b, func() run { return execHere(filepath.Join(dir, "empty"), env, nil) }) },
		func() { s.timed(b, func() run { return execHere(filepath.Join(dir, "sdkonly"), env, nil) }) },
	})
	v.report(b, "vpc-version")
	e.report(b, "empty")
	s.report(b, "sdkonly")
	ratio(b, "version-vs-empty", &v, &e)
	ratio(b, "sdkonly-vs-empty", &s, &e)
}

// IPAM only: vpc-cni as the "ipam" of a ptp-style configuration, called the
// way ptp calls its IPAM, against host-local called the same way. Target:
// at most 0.8x host-local. The DEL that returns the address is not timed.
func BenchmarkIPAMAdd(b *testing.B) {
	w := warmWorld(b)
	p := w.newPod("ipam")
	conf := func(ipam map[string]any) []byte {
		return mustJSON(b, map[string]any{"cniVersion": "1.1.0", "name": "vpc", "type": "ptp", "ipam": ipam})
	}
	ours, theirs := conf(w.ipamConf()), conf(hostLocalIPAM(b))
	var v, h samples
	for b.Loop() {
		v.timed(b, func() run { return w.execInNode(bin("vpc-cni"), p.env("ADD"), ours) })
		h.timed(b, func() run { return w.execInNode(bin("host-local"), p.env("ADD"), theirs) })
		b.StopTimer()
		w.execInNode(bin("vpc-cni"), p.env("DEL"), ours)
		w.execInNode(bin("host-local"), p.env("DEL"), theirs)
		b.StartTimer()
	}
	v.report(b, "vpc-ipam-add")
	h.report(b, "host-local-add")
	ratio(b, "ipam-ratio", &v, &h)
	w.reportRSS(b, "vpc-ipam-maxrss-KiB", bin("vpc-cni"), ours)
	w.reportRSS(b, "host-local-maxrss-KiB", bin("host-local"), theirs)
}

// IPAM ADD latency against the pool's size: 10, 1,000 and 10,000 addresses
// (half of them assigned), written straight into the store. Target: 10,000
// within 1.2x of 10.
func BenchmarkAddPoolSize(b *testing.B) {
	// The world serves for its node and pod netns, and its config file
	// settles the cooldown at 0 so the DEL makes its address reusable at once.
	w := newWorld(b, worldOpts{env: []string{"IP_COOLDOWN_PERIOD=0"}})
	p := w.newPod("size")
	sizes := []int{10, 1000, 10000}
	confs := make([][]byte, len(sizes))
	for i, n := range sizes {
		dir := b.TempDir()
		fillStore(b, dir, n)
		ipam := map[string]any{"type": "vpc-cni", "stateDir": dir, "logFile": filepath.Join(dir, "plugin.log"),
			"backgroundReconcile": false, "inlineGrow": false}
		confs[i] = mustJSON(b, map[string]any{"cniVersion": "1.1.0", "name": "vpc", "type": "ptp", "ipam": ipam})
	}
	s := make([]samples, len(sizes))
	for b.Loop() {
		for i := range sizes {
			s[i].timed(b, func() run { return w.execInNode(bin("vpc-cni"), p.env("ADD"), confs[i]) })
			b.StopTimer()
			w.execInNode(bin("vpc-cni"), p.env("DEL"), confs[i])
			b.StartTimer()
		}
	}
	for i, n := range sizes {
		s[i].report(b, fmt.Sprintf("pool%d", n))
	}
	ratio(b, "pool10000-vs-10", &s[2], &s[0])
}

// fillStore writes n free addresses on ready ENIs of 50 secondary addresses
// each (device 0 first) and assigns half of them.
func fillStore(b *testing.B, dir string, n int) {
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	err = st.Update(func(tx *store.Tx) error {
		cfg := pool.Config{WarmENITarget: 1, ReleaseDelay: time.Minute}
		if err := tx.PutSettings(store.Settings{Effective: cfg, UpdatedAt: now}); err != nil {
			return err
		}
		for dev := 0; dev*50 < n; dev++ {
			if err := tx.PutENI(benchENI(dev, min(50, n-dev*50), now)); err != nil {
				return err
			}
		}
		for i := range n / 2 {
			a := store.Assignment{Key: fmt.Sprintf("held-%d/eth0", i)}
			if _, err := tx.Take(a, now, 0); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

func benchENI(dev, count int, now time.Time) pool.ENI {
	base := netip.MustParseAddr("100.64.0.0").As4()
	addr := func(i int) netip.Addr {
		v := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(dev*64+i)
		return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	}
	e := pool.ENI{ID: fmt.Sprintf("eni-%017x", dev), DeviceIndex: dev, MAC: fmt.Sprintf("02:00:00:00:%02x:%02x", dev>>8, dev&0xff),
		PrimaryIP: addr(0), SubnetID: "subnet-bench", SubnetCIDR: netip.MustParsePrefix("100.64.0.0/14"),
		Ready: true, CreatedAt: now}
	for i := 1; i <= count; i++ {
		ip := addr(i)
		e.Blocks = append(e.Blocks, pool.Block{CIDR: netip.PrefixFrom(ip, 32),
			Addrs: []pool.Addr{{IP: ip, State: pool.Free, Since: now}}})
	}
	return e
}
