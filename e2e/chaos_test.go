package e2e

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/plugins/pkg/ns"

	"vpc-cni/sim/ec2sim"
)

// chaosDuration is how long TestChaos runs its chaos phase (`make chaos`,
// CHAOS_DURATION); 0, the default, skips it so `make test` stays short.
var chaosDuration = flag.Duration("chaos.duration", 0, "run TestChaos's chaos phase this long (0: skip TestChaos)")

// chaosFamily is the IP family mode of the run (`make chaos
// CHAOS_FAMILY=ipv6`): ipv4, ipv6 (IPv6-only pods with v4if0) or dual.
var chaosFamily = flag.String("chaos.family", "ipv4", "TestChaos's IP family mode: ipv4, ipv6 or dual")

// chaosKeep is where a run with violations leaves a copy of its state dir
// (state.db, plugin.log) for the post-mortem (`make chaos CHAOS_KEEP=dir`).
var chaosKeep = flag.String("chaos.keep", "", "copy the state dir (state.db, plugin.log) here when TestChaos finds a violation")

// chaosFamilyEnv are the knobs of a family mode.
func chaosFamilyEnv(t *testing.T, family string) []string {
	switch family {
	case "ipv4":
		return nil
	case "ipv6":
		return []string{"ENABLE_IPv6=true", "ENABLE_IPv4=false", "ENABLE_PREFIX_DELEGATION=true"}
	case "dual":
		return []string{"ENABLE_IPv6=true"}
	}
	t.Fatalf("-chaos.family=%q: want ipv4, ipv6 or dual", family)
	return nil
}

// chaosOpts: an m5.xlarge (4 ENIs x 15 addresses) with two ENIs that are not
// vpc-cni's (chaosOthers), so 2 x 14 = 28 addresses for 24 pods: the pool
// grows and shrinks by whole ENIs, with a short cooldown and release delay
// so freed addresses come back within the run.
var chaosOpts = worldOpts{instanceType: "m5.xlarge", env: []string{
	"WARM_IP_TARGET=3", "MINIMUM_IP_TARGET=3", "IP_COOLDOWN_PERIOD=2", "RELEASE_DELAY=3s"}}

// chaosOthers attaches, before the first pass, a user's ENI tagged
// no_manage=true (and, to tempt the code, this node's instance tag) and a
// trunk ENI, each holding secondary addresses; it returns them as attached.
func chaosOthers(s *ec2sim.Sim) (map[string]ec2sim.ENI, error) {
	out := map[string]ec2sim.ENI{}
	for _, spec := range []ec2sim.ENISpec{
		{Secondary: 2, Description: "multus", Tags: map[string]string{
			"node.k8s.amazonaws.com/no_manage": "true", "node.k8s.amazonaws.com/instance_id": s.State().InstanceID}},
		{Type: ec2sim.TypeTrunk, Secondary: 1, Description: "aws-k8s-trunk-eni"},
	} {
		e, err := s.AddENI(spec)
		if err != nil {
			return nil, err
		}
		out[e.ID] = e
	}
	return out, nil
}

const (
	chaosPods    = 24 // pod sandboxes, each ADDed and DELed over and over
	chaosWorkers = 6  // runtime threads; each owns chaosPods/chaosWorkers sandboxes
)

// TestChaos is the project's own chaos run: a runtime's parallel ADDs and
// DELs, reconcile passes, `pool warm` changes and EC2 faults, with random
// SIGKILLs of the plugin and vpcctl processes; then quiesce and check the
// node's invariants (chaos_check_test.go). go test ./e2e -run TestChaos
// -chaos.duration=2m -v
func TestChaos(t *testing.T) {
	if *chaosDuration <= 0 {
		t.Skip("chaos run: give -chaos.duration (make chaos)")
	}
	opts := chaosOpts
	opts.env = append(slices.Clone(opts.env), chaosFamilyEnv(t, *chaosFamily)...)
	var others map[string]ec2sim.ENI
	opts.prepare = func(s *ec2sim.Sim) []string {
		var err error
		if others, err = chaosOthers(s); err != nil {
			t.Fatal(err)
		}
		return nil
	}
	profiles := profileMix(t, &opts)
	w := newWorld(t, opts)
	cacheDir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cacheDir, "results"), 0o700); err != nil {
		t.Fatal(err)
	}
	conf := w.conf(map[string]any{"cniCacheDir": cacheDir})
	c := &chaos{w: w, conf: mustJSON(t, conf), network: conf["name"].(string), cacheDir: cacheDir,
		procs: map[*os.Process]string{}, slots: make([]*slot, chaosPods+chaosHeldSlots), stop: make(chan struct{}), others: others,
		profiles: profiles}
	for i := range c.slots {
		c.slots[i] = &slot{p: w.newPod(fmt.Sprintf("chaos-%d", i))}
	}
	c.profileConfs(conf)
	start := time.Now()
	c.startLoop()
	c.run(*chaosDuration)
	c.checkLoop()
	c.stopLoop()
	c.quiesce()
	c.checkInvariants()
	summary := c.summary(time.Since(start))
	fmt.Println(summary) // `make chaos` shows it without -v
	t.Log(summary)
	for _, v := range c.violations {
		t.Error("violation: " + v)
	}
	c.keep()
}

// keep copies the state dir to -chaos.keep after a run with violations.
func (c *chaos) keep() {
	if *chaosKeep == "" || len(c.violations) == 0 {
		return
	}
	dir := filepath.Join(*chaosKeep, time.Now().UTC().Format("20060102T150405Z"))
	if err := os.CopyFS(dir, os.DirFS(c.w.stateDir)); err != nil {
		c.w.tb.Logf("keeping the state dir: %v", err)
		return
	}
	c.w.tb.Logf("state dir kept in %s", dir)
}

// slot is one pod sandbox as the runtime sees it.
type slot struct {
	p    *pod
	live bool // the last ADD succeeded and no DEL ran since
	owed bool // a DEL is owed: an ADD or DEL failed or was killed
	// profile: the network profile the pod picks (-chaos.profiles), and
	// addConf the ADD configuration carrying its annotation.
	profile string
	addConf []byte
	span    *span // while live: its span (chaos_held_test.go)
}

// chaos drives one world; every process it starts is tracked so the killer
// signals only those, by their own handle.
type chaos struct {
	w        *world
	conf     []byte
	network  string // the conflist's name, as the CNI cache names entries
	cacheDir string // the runtime's CNI cache (cacheResult)
	slots    []*slot
	stop     chan struct{}

	others   map[string]ec2sim.ENI // not vpc-cni's, as attached before the run
	profiles []chaosProfile        // -chaos.profiles

	mu         sync.Mutex
	procs      map[*os.Process]string // running processes we started → kind
	violations []string
	why        map[string]int // "ADD code 11: no free address ..." → how often (killed runs: "killed")

	adds, addFails, dels, delFails            atomic.Int64
	kills                                     sync.Map // kind → *atomic.Int64
	faults, reconciles, reconcileFails, warms atomic.Int64
	stateFaults                               sync.Map // "removed", "emptied", "truncated" → *atomic.Int64

	loop            *servingLoop // the DaemonSet's loop the scrape flood hits (chaos_flood_test.go)
	loopPeak        *statWatch
	loopStart       procStats
	loopEnd         procStats // its peaks over the run
	floods, scrapes atomic.Int64

	spans            []*span // every live pod's span (chaos_held_test.go)
	heldAdds, heldOK atomic.Int64
}

func (c *chaos) violate(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.violations = append(c.violations, fmt.Sprintf(format, args...))
}

// run starts the runtime workers, the reconcile timer, the operator, the
// fault injector and the killer, and stops them after d.
func (c *chaos) run(d time.Duration) {
	var wg sync.WaitGroup
	for i := range chaosWorkers {
		wg.Go(func() { c.worker(c.slots[i*chaosPods/chaosWorkers : (i+1)*chaosPods/chaosWorkers]) })
	}
	wg.Go(c.reconciler)
	wg.Go(c.operator)
	wg.Go(c.faulter)
	wg.Go(c.stateFaulter)
	wg.Go(c.heldAdder)
	wg.Go(c.scrapeFlooder)
	wg.Go(c.killer)
	time.Sleep(d)
	close(c.stop)
	wg.Wait()
}

func (c *chaos) stopped() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

// pause waits up to d, less if the run stops.
func (c *chaos) pause(d time.Duration) {
	select {
	case <-c.stop:
	case <-time.After(d):
	}
}

// worker is one runtime thread: it ADDs a sandbox that has none, DELs one
// that is live or owes a DEL (a runtime retries DEL until it succeeds).
func (c *chaos) worker(slots []*slot) {
	for !c.stopped() {
		s := slots[rand.IntN(len(slots))]
		if s.live || s.owed {
			c.del(s)
		} else {
			c.add(s)
		}
		c.pause(time.Duration(rand.IntN(50)) * time.Millisecond)
	}
}

// add runs ADD for a new sandbox (container ID) of s's pod.
func (c *chaos) add(s *slot) {
	s.p = c.w.repod(s.p)
	c.adds.Add(1)
	conf := c.conf
	if s.addConf != nil {
		conf = s.addConf
	}
	r := c.exec("plugin", bin("vpc-cni"), s.p.env("ADD"), conf)
	if r.err == nil {
		s.live = true
		c.cacheResult(s.p, r.stdout)
		c.live(s, r.stdout)
		return
	}
	c.addFails.Add(1)
	s.owed = true // the runtime DELs a sandbox whose ADD failed
	c.checkFailure("ADD", s.p, r)
}

func (c *chaos) del(s *slot) bool {
	c.dels.Add(1)
	s.live = false
	c.dead(s)
	r := c.exec("plugin", bin("vpc-cni"), s.p.env("DEL"), c.conf)
	if r.err == nil {
		s.owed = false
		c.forgetResult(s.p)
		return true
	}
	c.delFails.Add(1)
	s.owed = true
	c.checkFailure("DEL", s.p, r)
	return false
}

// checkFailure: a plugin that was not killed answers with the spec's error
// JSON, never a crash.
func (c *chaos) checkFailure(verb string, p *pod, r run) {
	if killed(r) {
		c.tally(verb + " killed")
		return
	}
	var e types.Error
	if err := json.Unmarshal(r.stdout, &e); err != nil || e.Code == 0 {
		c.violate("%s %s failed without the spec's error JSON (%v): stdout %q stderr %q", verb, p.id, r.err, r.stdout, r.stderr)
		return
	}
	c.tally(fmt.Sprintf("%s code %d: %s", verb, e.Code, firstWords(e.Msg, 8)))
}

// tally counts a failure by its kind, so the summary says why runs failed.
func (c *chaos) tally(why string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.why == nil {
		c.why = map[string]int{}
	}
	c.why[why]++
}

// firstWords keeps the start of a message, where the kind of failure is
// named, and drops the IDs and figures after it.
func firstWords(msg string, n int) string {
	words := strings.Fields(msg)
	if len(words) > n {
		words = append(words[:n], "...")
	}
	return strings.Join(words, " ")
}

// failures lists the tallied kinds, most frequent first.
func (c *chaos) failures() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	kinds := make([]string, 0, len(c.why))
	for k := range c.why {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool { return c.why[kinds[i]] > c.why[kinds[j]] })
	var b strings.Builder
	for _, k := range kinds {
		fmt.Fprintf(&b, "\n  %5d  %s", c.why[k], k)
	}
	return b.String()
}

func killed(r run) bool {
	if r.state == nil {
		return false
	}
	ws, ok := r.state.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// reconciler is the systemd timer: one pass after another.
func (c *chaos) reconciler() {
	for !c.stopped() {
		if !c.reconcile() {
			c.reconcileFails.Add(1)
		}
		c.pause(time.Duration(200+rand.IntN(800)) * time.Millisecond)
	}
}

// reconcile runs one pass and reports whether it completed with no failed step.
func (c *chaos) reconcile() bool {
	c.reconciles.Add(1)
	r := c.vpcctl("reconcile", "reconcile", "--wait", "--timeout", "1m", "-o", "json", "--cni-cache-dir", c.cacheDir)
	if r.err != nil {
		return false
	}
	var rep struct {
		Failed []string `json:"failed"`
	}
	return json.Unmarshal(r.stdout, &rep) == nil && len(rep.Failed) == 0
}

// operator changes the warm pool now and then, as an operator at a shell.
func (c *chaos) operator() {
	targets := [][]string{
		{"--ip-target", "1", "--min-ip-target", "1"},
		{"--ip-target", "8", "--min-ip-target", "4"},
		{"--eni-target", "1", "--ip-target", "0", "--min-ip-target", "0"},
		{"--reset"},
	}
	for !c.stopped() {
		c.pause(time.Duration(2000+rand.IntN(3000)) * time.Millisecond)
		c.warms.Add(1)
		args := append([]string{"pool", "warm", "--timeout", "1m"}, targets[rand.IntN(len(targets))]...)
		c.vpcctl("warm", args...)
	}
}

// faulter switches the emulator's faults every few seconds: none,
// throttling, 5xx, latency, or all three.
func (c *chaos) faulter() {
	phases := []ec2sim.Faults{
		{},
		{ThrottleRate: 0.3},
		{ServerErrorRate: 0.2},
		{Latency: 80 * time.Millisecond},
		{ThrottleRate: 0.15, ServerErrorRate: 0.1, Latency: 30 * time.Millisecond},
	}
	for !c.stopped() {
		f := phases[rand.IntN(len(phases))]
		if f != (ec2sim.Faults{}) {
			c.faults.Add(1)
		}
		f.Seed = rand.Int64()
		c.w.sim.SetFaults(f)
		c.pause(time.Duration(2000+rand.IntN(4000)) * time.Millisecond)
	}
	c.w.sim.SetFaults(ec2sim.Faults{})
}

// killer SIGKILLs one of our running processes every so often.
func (c *chaos) killer() {
	for !c.stopped() {
		c.pause(time.Duration(100+rand.IntN(400)) * time.Millisecond)
		c.mu.Lock()
		var victims []*os.Process
		for p := range c.procs {
			victims = append(victims, p)
		}
		if len(victims) > 0 {
			p := victims[rand.IntN(len(victims))]
			// os.Process signals through its pidfd: never a reused pid.
			if p.Signal(syscall.SIGKILL) == nil {
				c.countKill(c.procs[p])
			}
		}
		c.mu.Unlock()
	}
}

func (c *chaos) countKill(kind string) {
	n, _ := c.kills.LoadOrStore(kind, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
}

func (c *chaos) killCount(kind string) int64 {
	if n, ok := c.kills.Load(kind); ok {
		return n.(*atomic.Int64).Load()
	}
	return 0
}

// vpcctl runs the CLI against the world's state dir as a tracked process.
func (c *chaos) vpcctl(kind string, args ...string) run {
	return c.exec(kind, bin("vpcctl"), nil, nil, append([]string{"--state-dir", c.w.stateDir}, args...)...)
}

// exec starts path from the node netns, as execInNode does, and tracks the
// process while it runs so the killer may pick it.
func (c *chaos) exec(kind, path string, env []string, stdin []byte, args ...string) run {
	var out, errb bytes.Buffer
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := c.w.node.Do(func(ns.NetNS) error { return cmd.Start() }); err != nil {
		return run{err: err}
	}
	c.mu.Lock()
	c.procs[cmd.Process] = kind
	c.mu.Unlock()
	err := cmd.Wait()
	c.mu.Lock()
	delete(c.procs, cmd.Process)
	c.mu.Unlock()
	return run{stdout: out.Bytes(), stderr: errb.Bytes(), err: err, state: cmd.ProcessState}
}

// quiesce: no more faults or kills; every sandbox that owes a DEL gets it
// (retried, as a runtime does), then reconcile passes until one has nothing
// to do.
func (c *chaos) quiesce() {
	c.w.sim.SetFaults(ec2sim.Faults{})
	c.operatorRebuild()
	for _, s := range c.slots {
		if !s.owed {
			continue
		}
		ok := false
		for range 5 {
			if ok = c.del(s); ok {
				break
			}
		}
		if !ok {
			c.violate("DEL %s still fails after the faults stopped", s.p.id)
		}
	}
	c.runtimeGC()
	for range 8 {
		r := c.vpcctl("settle", "reconcile", "--wait", "--timeout", "1m", "-o", "json", "--cni-cache-dir", c.cacheDir)
		var rep struct {
			Plan struct {
				Actions []json.RawMessage `json:"actions"`
			} `json:"plan"`
			Failed []string `json:"failed"`
		}
		if r.err == nil && json.Unmarshal(r.stdout, &rep) == nil && len(rep.Plan.Actions) == 0 && len(rep.Failed) == 0 {
			return
		}
		c.w.tb.Logf("settling: %v %s %s", r.err, r.stdout, r.stderr)
	}
	c.violate("reconcile did not settle in 8 passes after the faults stopped")
}

func (c *chaos) summary(d time.Duration) string {
	live := 0
	for _, s := range c.slots {
		if s.live {
			live++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "chaos: %v (chaos phase %v): ADDs %d (%d failed), DELs %d (%d failed), ", d.Round(time.Second),
		*chaosDuration, c.adds.Load(), c.addFails.Load(), c.dels.Load(), c.delFails.Load())
	fmt.Fprintf(&b, "SIGKILLs %d (plugin %d, reconcile %d, pool warm %d), fault phases %d, ",
		c.killCount("plugin")+c.killCount("reconcile")+c.killCount("warm"),
		c.killCount("plugin"), c.killCount("reconcile"), c.killCount("warm"), c.faults.Load())
	b.WriteString(c.stateFaultSummary())
	b.WriteString(c.heldSummary())
	b.WriteString(c.floodSummary())
	fmt.Fprintf(&b, "reconciles %d (%d failed or killed), pool warms %d, live pods at the end %d, violations %d",
		c.reconciles.Load(), c.reconcileFails.Load(), c.warms.Load(), live, len(c.violations))
	if f := c.failures(); f != "" {
		b.WriteString("\nfailed plugin runs by kind:" + f)
	}
	return b.String()
}
