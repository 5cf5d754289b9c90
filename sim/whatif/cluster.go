package whatif

import (
	"container/heap"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// ClusterOptions shape a cluster run: Nodes nodes of one instance type, each
// with PodsPerNode pods arriving at once at time 0 (a scale-up from empty
// nodes), then Rest at rest, all against one account's token buckets. The
// calls at rest are counted over the second half of Rest.
type ClusterOptions struct {
	Options
	Nodes       int
	PodsPerNode int
	// Together: the nodes booted together, so their timers start in step
	// (an autoscaler's scale-up) instead of spread over the interval.
	Together bool
}

// ClusterResult is what one setting cost the account.
type ClusterResult struct {
	Setting   Setting
	Nodes     int
	ScaleUp   time.Duration  // until every pod had an address
	Throttled map[string]int // calls the account refused, by action
	Calls     map[string]int // every call, by action
	Unserved  int            // pods still without an address at the end
	Wasted    int            // throttled calls, and calls whose work a throttled call undid
	NoBudget  int            // calls the nodes' budgets held back past the deadline
	// BudgetWait: the longest time one node's calls waited for its budget
	// in all.
	BudgetWait time.Duration
	// RestPerSecond: non-mutating calls per second over the rest period.
	RestPerSecond float64
}

// Cluster runs the nodes' models (modelNode) on one virtual clock, in time
// order, against one Account. Node i's timer is offset by i/Nodes of the
// interval, as timers started at different boots are.
func Cluster(s Setting, o ClusterOptions) (ClusterResult, error) {
	acct := NewAccount()
	res := ClusterResult{Setting: s, Nodes: o.Nodes}
	w := Bursts(o.PodsPerNode, o.PodsPerNode, time.Second)
	q, err := startNodes(s, o, w, acct)
	if err != nil {
		return res, err
	}
	// At rest is the second half of the rest period: by then the scale-up
	// and the confirmations after it are over.
	runEnd := w.End() + o.Rest + 5*time.Minute + 4*s.Interval
	restFrom := runEnd - o.Rest/2
	var atRest map[string]int
	for q.Len() > 0 {
		r := q[0]
		if atRest == nil && r.t >= restFrom {
			atRest = clone(acct.Calls)
		}
		done, err := r.step()
		if err != nil {
			return res, err
		}
		if !done {
			heap.Fix(&q, 0)
			continue
		}
		_ = r.finish() // pods left unserved are counted, not an error, in a cluster
		res.add(r.res)
		heap.Pop(&q)
	}
	res.Calls, res.Throttled = acct.Calls, acct.Throttled
	rest := runEnd - restFrom
	for k, v := range acct.Calls {
		if !Mutating(k) {
			res.RestPerSecond += float64(v-atRest[k]) / rest.Seconds()
		}
	}
	return res, nil
}

// startNodes boots the cluster's nodes on one account, their timers spread
// over the interval unless they boot together.
func startNodes(s Setting, o ClusterOptions, w Workload, acct *Account) (runQueue, error) {
	var q runQueue
	for i := range o.Nodes {
		n, err := newModelNode(fmt.Sprintf("i-%08x", i), s.Env, o.Options)
		if err != nil {
			return nil, err
		}
		no := o.Options
		if !o.Together {
			no.TimerPhase = time.Duration(int64(s.Interval) * int64(i) / int64(o.Nodes))
		}
		r := newRunner(n, w, s, no, acct)
		r.id = n.id
		if err := r.start(); err != nil {
			return nil, err
		}
		q = append(q, r)
	}
	heap.Init(&q)
	return q, nil
}

// add folds one node's result into the cluster's.
func (res *ClusterResult) add(r Result) {
	res.ScaleUp = max(res.ScaleUp, r.MaxWait)
	res.Unserved += r.Unserved
	res.Wasted += r.Wasted
	res.NoBudget += r.NoBudget
	res.BudgetWait = max(res.BudgetWait, r.BudgetWait)
}

func clone(m map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// runQueue orders the nodes' runners by the time of their next event.
type runQueue []*runner

func (q runQueue) Len() int           { return len(q) }
func (q runQueue) Less(i, j int) bool { return q[i].t < q[j].t }
func (q runQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *runQueue) Push(x any)        { *q = append(*q, x.(*runner)) }
func (q *runQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// WriteClusterTable prints one row per result.
func WriteClusterTable(w io.Writer, rs []ClusterResult) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODES\tSETTING\tREST CALLS/S\tSCALE-UP\tUNSERVED\tTHROTTLED\tWASTED\tDESCRIBES\tMUTATING\tBUDGET WAIT")
	for _, r := range rs {
		thr, desc, mut := 0, 0, 0
		for _, v := range r.Throttled {
			thr += v
		}
		for k, v := range r.Calls {
			if Mutating(k) {
				mut += v
			} else {
				desc += v
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%.2f\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", r.Nodes, r.Setting.Label(), r.RestPerSecond,
			r.ScaleUp.Round(time.Second), r.Unserved, thr, r.Wasted, desc, mut, r.BudgetWait.Round(time.Second))
	}
	return tw.Flush()
}
