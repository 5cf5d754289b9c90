package whatif

import (
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strings"
	"time"

	"vpc-cni/pool"
	"vpc-cni/store"
)

// Setting is one point of the grid: the node's knobs (settings' names) and
// the timer's interval.
type Setting struct {
	Env      map[string]string
	Interval time.Duration
}

// Label names the setting's knobs in a stable order, e.g. "WARM_IP_TARGET=1 timer=30s".
func (s Setting) Label() string {
	var parts []string
	for k, v := range s.Env {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(append(parts, "timer="+s.Interval.String()), " ")
}

// Options shape a run.
type Options struct {
	InstanceType string
	ENILatency   time.Duration // a new ENI's addresses are usable this long after its pass
	IMDSLag      time.Duration // IMDS shows a change to the node's ENIs this long after EC2 made it
	RefillDelay  time.Duration // an ADD that leaves the pool low starts a pass this much later
	TimerPhase   time.Duration // the node's first timer pass is at Interval+TimerPhase
	// TimerJitter delays each timer pass by up to this much (systemd's
	// RandomizedDelaySec: drawn again at each pass, from a hash of the node).
	TimerJitter time.Duration
	Rest        time.Duration // run on this much longer after the workload
	// ThrottleBackoff: the cluster model's growth back-off after EC2
	// throttled it (zero, as reconcile: none).
	ThrottleBackoff Backoff
}

// Result is what one setting cost on one workload.
type Result struct {
	Setting    Setting
	Calls      map[string]int // mutating EC2 calls, by action (the emulator's count)
	Mutating   int
	Describes  int
	Passes     int
	MeanIdle   float64       // time-weighted, while the workload runs
	P95Idle    int           // time-weighted
	RestIdle   int           // idle once at rest after the workload
	Empty      int           // pods that found the pool empty
	MeanWait   time.Duration // of those pods, until they had an address
	MaxWait    time.Duration
	ENIs       int           // most ENIs the node held
	Throttled  int           // calls the account's buckets would have refused
	Wasted     int           // throttled calls, and calls whose work a throttled call undid
	NoBudget   int           // calls the node's budget did not let out before the pass's deadline
	BudgetWait time.Duration // time calls waited for the node's budget, in all
	Unserved   int           // pods still without an address at the end (should be 0)
	// IPv6Calls: the IPv6 pool's EC2 calls (AssignIpv6Addresses,
	// UnassignIpv6Addresses) in the whole run, the node's start included:
	// its first pass gives the /80 pods take /128s from.
	IPv6Calls  map[string]int
	Adaptive   bool
	WorkloadID string
}

// Run replays w on a fresh node with setting s.
func Run(w Workload, s Setting, o Options) (Result, error) {
	n, err := newNode(s.Env, o)
	if err != nil {
		return Result{}, err
	}
	defer n.close()
	return replay(n, w, s, o, NewAccount())
}

// replay drives one node through w to the end.
func replay(n simNode, w Workload, s Setting, o Options, acct *Account) (Result, error) {
	r := newRunner(n, w, s, o, acct)
	err := r.start()
	for done := false; err == nil && !done; {
		done, err = r.step()
	}
	if err == nil {
		err = r.finish()
	}
	if err != nil {
		return r.res, fmt.Errorf("%s: %w", s.Label(), err)
	}
	return r.res, nil
}

type runner struct {
	n       simNode
	w       Workload
	s       Setting
	o       Options
	acct    *Account
	res     Result
	v6Start map[string]int // the IPv6 pool's EC2 calls while the node started
	waiting []string
	pools   map[string]pool.Pool // each pod's pool (its profile), by key
	arrived map[string]time.Duration
	refill  time.Duration // when a refill pass is due; <0 none
	idle    []idleSpan
	waits   []time.Duration

	t, timer, end, rest time.Duration // the loop's position
	ticks               int           // timer passes so far
	id                  string        // the node's name (the timer's jitter)
	arrivals, leaves    []Pod
}

func newRunner(n simNode, w Workload, s Setting, o Options, acct *Account) *runner {
	r := &runner{n: n, w: w, s: s, o: o, acct: acct, res: Result{Setting: s, WorkloadID: w.Name},
		arrived: map[string]time.Duration{}, pools: map[string]pool.Pool{}}
	_, r.res.Adaptive = s.Env["ADAPTIVE_GROWTH_WINDOW"]
	return r
}

type idleSpan struct {
	v int
	d time.Duration
}

func (r *runner) now() time.Duration { return r.n.vclock().t.Sub(epoch()) }

func (r *runner) setNow(d time.Duration) { r.n.vclock().t = epoch().Add(d) }

// start brings the pool to its targets with no pods, as a node starts (not
// counted), and sets the loop at time 0.
func (r *runner) start() error {
	for range 5 {
		res, err := r.n.pass(false, NewAccount())
		if err != nil {
			return err
		}
		if res.empty && r.n.due().IsZero() {
			break
		}
		r.setNow(r.now() + r.o.ENILatency)
	}
	r.v6Start = ipv6Calls(r.n.counters())
	r.n.resetCounters()
	r.setNow(0)
	r.refill = -1
	r.end = r.w.End()
	r.rest = r.end + r.restTime()
	r.arrivals, r.leaves = r.w.Pods, slices.Clone(r.w.Pods)
	slices.SortStableFunc(r.leaves, func(a, b Pod) int { return int(a.Leave - b.Leave) })
	r.leaves = slices.DeleteFunc(r.leaves, func(p Pod) bool { return p.Leave == 0 })
	r.ticks = -1
	r.timer = r.nextTimer()
	return nil
}

// step does what happens at the loop's time and moves it to the next event;
// done once past the rest period.
func (r *runner) step() (done bool, err error) {
	t := r.t
	r.setNow(t)
	var arriving []Pod
	for len(r.leaves) > 0 && r.leaves[0].Leave <= t {
		if err := r.leave(r.leaves[0].Key); err != nil {
			return false, err
		}
		r.leaves = r.leaves[1:]
	}
	for len(r.arrivals) > 0 && r.arrivals[0].At <= t {
		arriving, r.arrivals = append(arriving, r.arrivals[0]), r.arrivals[1:]
	}
	if err := r.add(arriving); err != nil {
		return false, err
	}
	if t >= r.timer || t == r.refill || r.enisDue() {
		if t >= r.timer {
			r.timer = r.nextTimer()
		}
		if t == r.refill {
			r.refill = -1
		}
		if err := r.pass(false); err != nil {
			return false, err
		}
	}
	next := r.next()
	if err := r.sample(t, min(next, r.end), r.end); err != nil {
		return false, err
	}
	r.t = max(next, t+time.Millisecond)
	return r.t > r.rest, nil
}

// nextTimer is the timer's next pass: Interval after the last one (the first
// at Interval+TimerPhase), plus a delay drawn again each time in
// [0, TimerJitter) as systemd's RandomizedDelaySec does, so the delays add
// up and nodes started in step drift apart.
func (r *runner) nextTimer() time.Duration {
	r.ticks++
	at := r.timer + r.s.Interval
	if r.ticks == 0 {
		at = r.s.Interval + r.o.TimerPhase
	}
	if r.o.TimerJitter > 0 {
		h := fnv.New64a()
		fmt.Fprintf(h, "%s/%d", r.id, r.ticks)
		at += time.Duration(h.Sum64() % uint64(r.o.TimerJitter))
	}
	return at
}

// next is the time of the next event.
func (r *runner) next() time.Duration {
	next := min(r.timer, r.rest+1)
	if len(r.arrivals) > 0 {
		next = min(next, r.arrivals[0].At)
	}
	if len(r.leaves) > 0 {
		next = min(next, r.leaves[0].Leave)
	}
	if r.refill >= 0 {
		next = min(next, r.refill)
	}
	if due := r.n.due(); !due.IsZero() {
		next = min(next, due.Sub(epoch()))
	}
	return next
}

// restTime is how long after the workload the run goes on, so the pool has
// time to give its excess back: the release delay, a window, and passes.
func (r *runner) restTime() time.Duration {
	return r.o.Rest + 5*time.Minute + 4*r.s.Interval + 2*parseDur(r.s.Env["ADAPTIVE_GROWTH_WINDOW"]) +
		parseDur(r.s.Env["RELEASE_DELAY"])
}

func parseDur(s string) time.Duration {
	if d, err := time.ParseDuration(s); err == nil {
		return d
	}
	var n int
	if _, err := fmt.Sscan(s, &n); err == nil {
		return time.Duration(n) * time.Second
	}
	return 0
}

func (r *runner) enisDue() bool {
	due := r.n.due()
	return !due.IsZero() && !due.After(r.n.vclock().t)
}

// add is the plugin's ADD for pods arriving together: each takes an address;
// those that find none register as waiting and one grow-only pass serves them.
func (r *runner) add(pods []Pod) error {
	var empty []string
	for _, p := range pods {
		r.arrived[p.Key] = r.now()
		r.pools[p.Key] = p.Pool
		ok, low, err := r.n.take(p.Key, p.Pool)
		if err != nil {
			return err
		}
		if !ok {
			empty = append(empty, p.Key)
			continue
		}
		if low && r.refill < 0 {
			r.refill = r.now() + r.o.RefillDelay
		}
	}
	if len(empty) == 0 {
		return nil
	}
	r.res.Empty += len(empty)
	for _, k := range empty {
		if err := r.n.wait(k, r.pools[k], true); err != nil {
			return err
		}
	}
	r.waiting = append(r.waiting, empty...)
	return r.pass(true)
}

func (r *runner) leave(key string) error {
	if i := slices.Index(r.waiting, key); i >= 0 {
		r.waiting = slices.Delete(r.waiting, i, i+1)
		return r.n.wait(key, r.pools[key], false)
	}
	return r.n.give(key)
}

// pass runs a pass, counts its calls against the account, and retries the
// waiting pods (kubelet retries their ADD).
func (r *runner) pass(growOnly bool) error {
	res, err := r.n.pass(growOnly, r.acct)
	if err != nil {
		return err
	}
	r.res.Passes++
	r.res.Throttled += res.throttled
	r.res.Wasted += res.throttled + res.undone
	r.res.NoBudget += res.noBudget
	r.res.BudgetWait += res.budgetWait
	var still []string
	for _, k := range r.waiting {
		ok, _, err := r.n.take(k, r.pools[k])
		if err != nil {
			return err
		}
		if !ok {
			still = append(still, k)
			continue
		}
		r.waits = append(r.waits, r.now()-r.arrived[k])
		if err := r.n.wait(k, r.pools[k], false); err != nil {
			return err
		}
	}
	r.waiting = still
	return nil
}

// sample records the idle addresses from t until next (within the workload).
func (r *runner) sample(t, next, end time.Duration) error {
	idle, enis, err := r.n.idle()
	if err != nil {
		return err
	}
	r.res.ENIs = max(r.res.ENIs, enis)
	if t < end && next > t {
		r.idle = append(r.idle, idleSpan{idle, next - t})
	}
	r.res.RestIdle = idle
	return nil
}

func (r *runner) finish() error {
	r.res.Calls = map[string]int{}
	for k, v := range r.n.counters() {
		if Mutating(k) {
			r.res.Calls[k] = v
			r.res.Mutating += v
		} else if strings.HasPrefix(k, "Describe") {
			r.res.Describes += v
		}
	}
	r.res.IPv6Calls = ipv6Calls(r.n.counters())
	for k, v := range r.v6Start {
		r.res.IPv6Calls[k] += v
	}
	r.res.MeanIdle, r.res.P95Idle = weighted(r.idle)
	r.res.Unserved = len(r.waiting)
	for _, w := range r.waits {
		r.res.MeanWait += w
		r.res.MaxWait = max(r.res.MaxWait, w)
	}
	if len(r.waits) > 0 {
		r.res.MeanWait /= time.Duration(len(r.waits))
	}
	if r.res.Unserved > 0 {
		return errors.New("pods left without an address at the end of the run")
	}
	return nil
}

// ipv6Calls picks the IPv6 pool's EC2 calls out of counters.
func ipv6Calls(counters map[string]int) map[string]int {
	out := map[string]int{}
	for _, k := range []string{"AssignIpv6Addresses", "UnassignIpv6Addresses"} {
		if counters[k] > 0 {
			out[k] = counters[k]
		}
	}
	return out
}

// weighted is the time-weighted mean and 95th percentile of the spans.
func weighted(spans []idleSpan) (float64, int) {
	var total time.Duration
	var sum float64
	for _, s := range spans {
		total += s.d
		sum += float64(s.v) * s.d.Seconds()
	}
	if total == 0 {
		return 0, 0
	}
	sorted := slices.Clone(spans)
	slices.SortFunc(sorted, func(a, b idleSpan) int { return a.v - b.v })
	var acc time.Duration
	p95 := sorted[len(sorted)-1].v
	for _, s := range sorted {
		acc += s.d
		if acc >= total*95/100 {
			p95 = s.v
			break
		}
	}
	return sum / total.Seconds(), p95
}

func isNoFree(err error) bool { return errors.Is(err, store.ErrNoFreeAddress) }
func isUninit(err error) bool { return errors.Is(err, store.ErrNotInitialized) }
