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

	"github.com/containernetworking/plugins/pkg/testutils"

	"vpc-cni/internal/testsupport/testenv"
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
	b.ReportMetric(s.pct(0.9), name+"-p90-ms")
	b.ReportMetric(s.pct(0.99), name+"-p99-ms")
}

// max is the slowest sample, in ms.
func (s *samples) max() float64 { return s.pct(1) }

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

// contestant is one plugin as a node would run it: its binary, installed by
// copy, its configuration, and the timings of its verbs.
type contestant struct {
	name     string
	path     string
	conf     []byte
	env      []string // CNI_PATH: the plugin dir, where ptp finds host-local
	add, del samples
	refills  int    // background reconciles its ADDs started
	settle   func() // untimed, after each round: let the node come to rest
}

// contestants installs vpc-cni (with the background refill on, its default),
// ptp + host-local and, with VPC_CNI_BENCH_BEFORE, an older vpcctl.
func contestants(b *testing.B, w *world) []*contestant {
	dir := installPlugins(b)
	env := []string{"CNI_PATH=" + dir}
	ours := mustJSON(b, w.conf(map[string]any{"backgroundReconcile": true}))
	watch := &bgWatch{path: filepath.Join(w.stateDir, "plugin.log")}
	vpc := &contestant{name: "vpc-cni", path: filepath.Join(dir, "vpc-cni"), conf: ours, env: env}
	vpc.settle = func() { vpc.refills += watch.wait(b) }
	ptp := &contestant{name: "ptp+host-local", path: filepath.Join(dir, "ptp"), env: env, settle: func() {},
		conf: mustJSON(b, map[string]any{"cniVersion": "1.1.0", "name": "vpc", "type": "ptp", "mtu": 9001,
			"ipam": hostLocalIPAM(b)})}
	all := []*contestant{vpc, ptp}
	if before := beforeBinary(b, dir); before != "" {
		old := &contestant{name: "before", path: before, conf: ours, env: append(slices.Clone(env), beforeEnv()...)}
		old.settle = func() { old.refills += watch.wait(b) }
		all = append(all, old)
	}
	return all
}

// beforeEnv is VPC_CNI_BENCH_BEFORE_ENV's variables (space-separated
// NAME=value), given to the older vpcctl alone: the same binary as before
// with GOMAXPROCS=1 measures what a runtime setting is worth.
func beforeEnv() []string { return strings.Fields(os.Getenv("VPC_CNI_BENCH_BEFORE_ENV")) }

// installPlugins copies vpcctl (as vpc-cni), ptp and host-local into a
// plugin dir through write(2), as an installer fills /opt/cni/bin.
func installPlugins(b *testing.B) string {
	dir := b.TempDir()
	for dst, src := range map[string]string{"vpc-cni": "vpcctl", "ptp": "ptp", "host-local": "host-local"} {
		installCopy(b, bin(src), filepath.Join(dir, dst))
	}
	return dir
}

func installCopy(b testing.TB, src, dst string) {
	data, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		b.Fatal(err)
	}
}

// bgWatch follows the plugin log for the background reconciles ADDs start.
type bgWatch struct {
	path string
	off  int
}

// wait waits for the background reconciles logged since the last call to
// end (a detached pass must not run into the next contestant's round) and
// returns how many there were.
func (bw *bgWatch) wait(b testing.TB) int {
	data, err := os.ReadFile(bw.path)
	if err != nil || len(data) < bw.off {
		return 0
	}
	found := startedRe.FindAllSubmatch(data[bw.off:], -1)
	bw.off = len(data)
	for _, m := range found {
		pid, _ := strconv.Atoi(string(m[1]))
		if !waitPidGone(pid, 2*time.Minute) {
			b.Fatalf("background reconcile %d still running after 2 minutes", pid)
		}
	}
	return len(found)
}

func (c *contestant) run(w *world, p *pod, verb string) run {
	return w.execInNode(c.path, append(p.env(verb), c.env...), c.conf)
}

// benchPods makes n pod namespaces off the clock; the returned func removes
// them, off the clock too.
func benchPods(b *testing.B, w *world, n int) ([]*pod, func()) {
	b.StopTimer()
	defer b.StartTimer()
	pods := w.newPods("bench", n)
	return pods, func() {
		b.StopTimer()
		defer b.StartTimer()
		for _, p := range pods {
			_ = p.ns.Close()
			_ = testutils.UnmountNS(p.ns)
		}
		// The runtime deleted the namespaces: their pairs go (DEL left them
		// to it) before the next round's pods, named alike, come.
		w.waitNoVeths()
	}
}

// churn: ADD then DEL of one pod at a time.
func (c *contestant) churn(b *testing.B, w *world) {
	pods, done := benchPods(b, w, 1)
	c.add.timed(b, func() run { return c.run(w, pods[0], "ADD") })
	c.del.timed(b, func() run { return c.run(w, pods[0], "DEL") })
	done()
	b.StopTimer()
	c.settle()
	b.StartTimer()
}

// burstSize is the burst's pods: BenchmarkBurst's pool keeps this many free.
const burstSize = 20

// burst: burstSize ADDs in a row, then their DELs in the same order.
func (c *contestant) burst(b *testing.B, w *world) {
	pods, done := benchPods(b, w, burstSize)
	for _, p := range pods {
		c.add.timed(b, func() run { return c.run(w, p, "ADD") })
	}
	for _, p := range pods {
		c.del.timed(b, func() run { return c.run(w, p, "DEL") })
	}
	done()
	b.StopTimer()
	c.settle()
	b.StartTimer()
}

// Churn: ADD then DEL of one pod at a time, vpc-cni (a warm pool of 20, the
// background refill on) against ptp + host-local, each installed by copy as
// users get them, rounds alternated. Targets: ADD at most 0.6x, DEL 0.8x.
func BenchmarkChurn(b *testing.B) {
	w := warmWorld(b)
	all := contestants(b, w)
	rotated(b, roundsOf(b, w, all, (*contestant).churn))
	reportContest(b, "churn", all)
	w.reportRSS(b, "vpc-add-maxrss-KiB", all[0].path, all[0].conf)
	w.reportRSS(b, "ptp-add-maxrss-KiB", all[1].path, all[1].conf)
}

// Burst: 20 ADDs in a row, each leaving the pool under its target of 20
// free addresses (so each may start a background refill, which runs under
// the next ADDs), then 20 DELs; for ptp + host-local the same 40 calls.
// Between rounds, off the clock, the refills finish and a pass gives the
// DELs' surplus back (RELEASE_DELAY=1), so every round starts at the target.
// Targets: ADD at most 0.6x, DEL 0.8x of ptp + host-local.
func BenchmarkBurst(b *testing.B) {
	env := []string{"WARM_IP_TARGET=" + strconv.Itoa(burstSize), "IP_COOLDOWN_PERIOD=0", "RELEASE_DELAY=1"}
	w := newWorld(b, worldOpts{instanceType: "c5.4xlarge", env: env})
	all := contestants(b, w)
	for _, c := range all {
		if c.name != "ptp+host-local" {
			settle := c.settle
			c.settle = func() { settle(); w.settleFree(burstSize) }
		}
	}
	rotated(b, roundsOf(b, w, all, (*contestant).burst))
	reportContest(b, "burst", all)
}

func roundsOf(b *testing.B, w *world, all []*contestant, round func(*contestant, *testing.B, *world)) []func() {
	var out []func()
	for _, c := range all {
		out = append(out, func() { round(c, b, w) })
	}
	return out
}

// settleFree runs passes until the pool holds at most target free
// addresses: the surplus goes once it has lasted RELEASE_DELAY.
func (w *world) settleFree(target int) {
	w.tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		w.reconcile()
		var over bool
		w.view(func(tx *store.Tx) (err error) {
			over, err = tx.AvailableAtLeast(target+1, time.Now(), pool.Config{})
			return err
		})
		if !over {
			return
		}
		if time.Now().After(deadline) {
			w.tb.Fatalf("the pool still holds more than %d free addresses after a minute of passes", target)
		}
		time.Sleep(250 * time.Millisecond) // RELEASE_DELAY is in whole seconds: poll, don't spin passes
	}
}

// reportContest reports each contestant's medians and p99s, the ratios to
// ptp + host-local, and prints them as a table.
func reportContest(b *testing.B, workload string, all []*contestant) {
	ref := all[1]
	var tab strings.Builder
	fmt.Fprintf(&tab, "\n%s (%d ADDs and %d DELs each; ratios of medians)\n", workload, len(ref.add.d), len(ref.del.d))
	fmt.Fprintf(&tab, "%-16s %9s %9s %9s %9s %9s %9s %8s\n", "contestant", "ADD p50", "ADD p90", "ADD ratio",
		"DEL p50", "DEL p90", "DEL ratio", "refills")
	for _, c := range all {
		short := strings.SplitN(c.name, "+", 2)[0]
		c.add.report(b, workload+"-"+short+"-add")
		c.del.report(b, workload+"-"+short+"-del")
		addR, delR := c.add.pct(0.5)/ref.add.pct(0.5), c.del.pct(0.5)/ref.del.pct(0.5)
		if c != ref {
			b.ReportMetric(addR, workload+"-"+short+"-add-ratio")
			b.ReportMetric(delR, workload+"-"+short+"-del-ratio")
		}
		fmt.Fprintf(&tab, "%-16s %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %8d\n", c.name, c.add.pct(0.5), c.add.pct(0.9), addR,
			c.del.pct(0.5), c.del.pct(0.9), delR, c.refills)
	}
	fmt.Fprintf(&tab, "targets: ADD ratio <= 0.60, DEL ratio <= 0.50; load average %s", loadAvg())
	b.Log(tab.String())
}

// loadAvg is /proc/loadavg's first three figures: the machine is shared.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(data))[:3], " ")
}

// beforeBinary is VPC_CNI_BENCH_BEFORE: another build of vpcctl (say, of
// the commit before a change) that the churn and burst run in the same
// rounds, so a before/after comparison sees the same load. It is installed
// by copy as vpc-cni in a dir of its own under dir, since the binary acts as
// the plugin only under that name.
func beforeBinary(b *testing.B, dir string) string {
	src := os.Getenv("VPC_CNI_BENCH_BEFORE")
	if src == "" {
		return ""
	}
	sub := filepath.Join(dir, "before")
	if err := os.Mkdir(sub, 0o755); err != nil {
		b.Fatal(err)
	}
	installCopy(b, src, filepath.Join(sub, "vpc-cni"))
	return filepath.Join(sub, "vpc-cni")
}

// Start-up in plugin mode: CNI_COMMAND=VERSION, which does no I/O beyond
// printing, against an empty static Go binary (the floor), one that only
// links the EC2 and IMDS clients and bbolt (what the plugin cannot drop),
// both built with the Makefile's flags, ptp as upstream releases it (the
// peer of the ADD and DEL figures) and, with VPC_CNI_BENCH_BEFORE, the older
// build. Target: vpc-cni within 1.5x of empty; sdkonly-vs-empty shows how
// much of that budget linking the SDK already takes on this machine.
func BenchmarkVersionStartup(b *testing.B) {
	testenv.RequireRoot(b, needsRoot)
	dir := b.TempDir()
	for _, name := range []string{"empty", "sdkonly"} {
		if err := run1(goBinary(), "build", "-trimpath", "-ldflags", "-s -w", "-o", filepath.Join(dir, name),
			"./testdata/startup/"+name); err != nil {
			b.Fatal(err)
		}
	}
	installCopy(b, bin("vpcctl"), filepath.Join(dir, "vpc-cni")) // by copy, as users get it
	installCopy(b, bin("ptp"), filepath.Join(dir, "ptp"))
	all := []*starter{{name: "vpc-cni", path: filepath.Join(dir, "vpc-cni")}, {name: "empty Go", path: filepath.Join(dir, "empty")},
		{name: "sdk+bbolt only", path: filepath.Join(dir, "sdkonly")}, {name: "ptp", path: filepath.Join(dir, "ptp")}}
	if before := beforeBinary(b, dir); before != "" {
		all = append(all, &starter{name: "before", path: before})
	}
	var rounds []func()
	for _, s := range all {
		rounds = append(rounds, func() { s.timed(b, func() run { return execHere(s.path, versionEnv, versionConf) }) })
	}
	rotated(b, rounds)
	reportStartup(b, all)
}

// starter is one binary of the VERSION start-up and its timings.
type starter struct {
	samples
	name, path string
}

// The conflist VERSION reads: ptp checks the version it names; the Go
// binaries ignore it.
var (
	versionConf = []byte(`{"cniVersion":"1.1.0","name":"vpc","type":"ptp"}`)
	versionEnv  = []string{"CNI_COMMAND=VERSION"}
)

// reportStartup reports each binary's median and p90 and its ratios to the
// empty binary (all[1]) and to ptp (all[3]), and prints them as a table.
func reportStartup(b *testing.B, all []*starter) {
	empty, ptp := all[1], all[3]
	metric := map[string]string{"vpc-cni": "vpc-version", "empty Go": "empty", "sdk+bbolt only": "sdkonly",
		"ptp": "ptp-version", "before": "before-version"}
	var tab strings.Builder
	fmt.Fprintf(&tab, "\nVERSION start-up (%d execs each)\n%-16s %9s %9s %9s %9s\n", len(empty.d), "binary", "p50 ms", "p90 ms",
		"vs empty", "vs ptp")
	for _, s := range all {
		s.report(b, metric[s.name])
		fmt.Fprintf(&tab, "%-16s %9.2f %9.2f %9.2f %9.2f\n", s.name, s.pct(0.5), s.pct(0.9), s.pct(0.5)/empty.pct(0.5),
			s.pct(0.5)/ptp.pct(0.5))
	}
	ratio(b, "version-vs-empty", &all[0].samples, &empty.samples)
	ratio(b, "sdkonly-vs-empty", &all[2].samples, &empty.samples)
	ratio(b, "version-vs-ptp", &all[0].samples, &ptp.samples)
	if len(all) > 4 {
		ratio(b, "before-version-vs-ptp", &all[4].samples, &ptp.samples)
	}
	fmt.Fprintf(&tab, "target: vpc-cni <= 1.50 of the empty binary; load average %s", loadAvg())
	b.Log(tab.String())
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
	st, err := store.OpenNew(dir, store.Options{})
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
			if _, err := tx.Take(a, now, pool.Config{}); err != nil {
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
