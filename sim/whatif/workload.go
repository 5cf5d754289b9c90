package whatif

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"vpc-cni/pool"
)

// Pod is one pod's life on the node: it asks for an address of its pool
// (the profile it picks; none: the default pool) At and gives it back at
// Leave (zero: it stays to the end of the run).
type Pod struct {
	Key   string
	At    time.Duration
	Leave time.Duration
	Pool  pool.Pool
}

// Workload is the pods of one run, ordered by arrival.
type Workload struct {
	Name string
	Pods []Pod
}

func podKey(i int) string { return fmt.Sprintf("pod%05d/eth0", i) }

// Steady is n pods arriving one every gap, staying.
func Steady(n int, gap time.Duration) Workload {
	w := Workload{Name: fmt.Sprintf("steady: %d pods, one every %s", n, gap)}
	for i := range n {
		w.Pods = append(w.Pods, Pod{Key: podKey(i), At: time.Duration(i) * gap})
	}
	return w
}

// Bursts is n pods arriving size at a time, a burst every gap, staying.
func Bursts(n, size int, gap time.Duration) Workload {
	w := Workload{Name: fmt.Sprintf("bursts: %d pods, %d every %s", n, size, gap)}
	for i := range n {
		w.Pods = append(w.Pods, Pod{Key: podKey(i), At: time.Duration(i/max(size, 1)) * gap})
	}
	return w
}

// Rollout is a deployment of n replicas, started one a second, then rolled
// after settle: waves of a quarter of n (maxSurge 25 %), each wave's new pods
// arriving together and the old ones leaving gap later, when the next wave comes.
func Rollout(n int, settle, gap time.Duration) Workload {
	w := Workload{Name: fmt.Sprintf("rollout: %d replicas, waves of 25%% every %s", n, gap)}
	wave := max((n+3)/4, 1)
	for i := range n {
		start := settle + time.Duration(i/wave)*gap
		w.Pods = append(w.Pods,
			Pod{Key: podKey(i), At: time.Duration(i) * time.Second, Leave: start + gap},
			Pod{Key: podKey(n + i), At: start})
	}
	slices.SortStableFunc(w.Pods, func(a, b Pod) int { return int(a.At - b.At) })
	return w
}

// Daily is a day's cycle: arrivals at a rate that follows a sine from 0 at
// the start to peak per hour at mid-day, each pod living for life.
func Daily(peak int, day, life time.Duration) Workload {
	w := Workload{Name: fmt.Sprintf("daily: up to %d pods an hour over %s, each living %s", peak, day, life)}
	step := time.Second
	acc := 0.0
	for t := time.Duration(0); t < day; t += step {
		phase := math.Sin(math.Pi * float64(t) / float64(day))
		acc += float64(peak) * phase * phase * step.Hours()
		for acc >= 1 {
			acc--
			w.Pods = append(w.Pods, Pod{Key: podKey(len(w.Pods)), At: t, Leave: t + life})
		}
	}
	return w
}

// ReadTrace reads a trace: one event a line, "<seconds> add <pod> [profile]"
// or "<seconds> del <pod>", in time order; blank lines and # comments
// skipped. An add that names a profile is a pod of that profile's pool.
func ReadTrace(r io.Reader, name string) (Workload, error) {
	w := Workload{Name: "trace " + name}
	idx := map[string]int{}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 && (len(f) != 4 || f[1] != "add") {
			return w, fmt.Errorf("%s:%d: want \"<seconds> add <pod> [profile]\" or \"<seconds> del <pod>\", got %q", name, line, sc.Text())
		}
		sec, err := strconv.ParseFloat(f[0], 64)
		if err != nil || sec < 0 {
			return w, fmt.Errorf("%s:%d: %q is not a number of seconds", name, line, f[0])
		}
		at := time.Duration(sec * float64(time.Second))
		switch i, seen := idx[f[2]]; {
		case f[1] == "add" && !seen:
			idx[f[2]] = len(w.Pods)
			w.Pods = append(w.Pods, Pod{Key: f[2] + "/eth0", At: at, Pool: pool.PoolOrDefault(strings.Join(f[3:], ""))})
		case f[1] == "del" && seen && w.Pods[i].Leave == 0 && at >= w.Pods[i].At:
			w.Pods[i].Leave = at
		default:
			return w, fmt.Errorf("%s:%d: %s of %q does not follow its pod's life (add once, then del once)", name, line, f[1], f[2])
		}
	}
	if err := sc.Err(); err != nil {
		return w, fmt.Errorf("%s: %w", name, err)
	}
	slices.SortStableFunc(w.Pods, func(a, b Pod) int { return int(a.At - b.At) })
	return w, nil
}

// End is when the last pod arrives or leaves.
func (w Workload) End() time.Duration {
	var end time.Duration
	for _, p := range w.Pods {
		end = max(end, p.At, p.Leave)
	}
	return end
}
