package e2e

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"vpc-cni/store"
)

var chaosStateFaults = flag.Bool("chaos.state-faults", true, "TestChaos also removes, empties or truncates state.db at random moments (make chaos CHAOS_STATE_FAULTS=false turns it off)")

// stateFaulter removes, empties or truncates state.db every few seconds
// while ADDs, DELs and passes run: a wiped state dir, a replaced disk, a
// file cut short. Lost state is rebuilt from EC2 and the kernel, with the
// runtime's CNI cache and the host veths naming the pods; no address may
// end up on two live pods meanwhile.
func (c *chaos) stateFaulter() {
	if !*chaosStateFaults {
		return
	}
	path := filepath.Join(c.w.stateDir, store.DBFile)
	for !c.stopped() {
		c.pause(time.Duration(3000+rand.IntN(5000)) * time.Millisecond)
		if c.stopped() {
			return
		}
		if kind, err := stateFault(path); err == nil {
			c.countStateFault(kind)
		}
		// Emptied under a writer that still has it open, the file can come
		// out damaged (the writer's pages land in the emptied file). The
		// operator does what doctor says: `state rebuild`, which refuses a
		// sound file and rebuilds a damaged or lost one.
		c.pause(time.Duration(1000+rand.IntN(2000)) * time.Millisecond)
		c.operatorRebuild()
	}
}

// stateFault does one of the three to the file at path and names it.
func stateFault(path string) (string, error) {
	switch rand.IntN(3) {
	case 0:
		return "removed", os.Remove(path)
	case 1:
		return "emptied", os.Truncate(path, 0)
	}
	info, err := os.Stat(path)
	if err != nil {
		return "truncated", err
	}
	pages := info.Size() / 4096 // bbolt's pages on this machine
	return "truncated", os.Truncate(path, rand.Int64N(max(pages, 1))*4096+rand.Int64N(4096))
}

func (c *chaos) countStateFault(kind string) {
	n, _ := c.stateFaults.LoadOrStore(kind, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
}

// stateFaultSummary is the summary's part about the state faults.
func (c *chaos) stateFaultSummary() string {
	if !*chaosStateFaults {
		return "state faults off, "
	}
	count := func(kind string) int64 {
		if n, ok := c.stateFaults.Load(kind); ok {
			return n.(*atomic.Int64).Load()
		}
		return 0
	}
	return fmt.Sprintf("state.db removed %d, emptied %d, truncated %d times, removed during a held ADD %d times, ",
		count("removed"), count("emptied"), count("truncated"), count("removed during an ADD"))
}

// operatorRebuild runs `vpcctl state rebuild` as an operator would after
// doctor named a damaged file; on a sound file it refuses and changes
// nothing.
func (c *chaos) operatorRebuild() {
	if *chaosStateFaults {
		c.vpcctl("rebuild", "state", "rebuild", "--timeout", "1m", "--cni-cache-dir", c.cacheDir)
	}
}

// cacheResult keeps the runtime's CNI cache entry of a successful ADD, as
// libcni does (results/<network>-<container ID>-<interface>), so a rebuild
// names the pod; forgetResult drops it after a successful DEL.
func (c *chaos) cacheResult(p *pod, result []byte) {
	entry := map[string]any{"kind": "cniCacheV1", "containerId": p.id, "ifName": p.ifname, "networkName": c.network,
		"netns": p.ns.Path(), "cniArgs": p.k8sArgs(), "result": json.RawMessage(result)}
	raw, err := json.Marshal(entry)
	if err == nil {
		err = os.WriteFile(c.cacheFile(p), raw, 0o600)
	}
	if err != nil {
		c.violate("writing the CNI cache entry of %s: %v", p.id, err)
	}
}

func (c *chaos) forgetResult(p *pod) { _ = os.Remove(c.cacheFile(p)) }

func (c *chaos) cacheFile(p *pod) string {
	return filepath.Join(c.cacheDir, "results", c.network+"-"+p.id+"-"+p.ifname)
}

// runtimeGC is containerd 2.x's periodic CNI GC after the run: the live
// sandboxes are the valid attachments, and what the plugin holds for any
// other (a sandbox whose DEL ran while the state was lost and a rebuild
// then restored it from the cache) is released.
func (c *chaos) runtimeGC() {
	var conf map[string]any
	if err := json.Unmarshal(c.conf, &conf); err != nil {
		c.violate("GC conf: %v", err)
		return
	}
	valid := []any{}
	for _, s := range c.slots {
		if s.live {
			valid = append(valid, map[string]any{"containerID": s.p.id, "ifname": s.p.ifname})
		}
	}
	conf["cniVersion"], conf["cni.dev/valid-attachments"] = "1.1.0", valid
	raw, _ := json.Marshal(conf)
	env := []string{"CNI_COMMAND=GC", "CNI_PATH=" + binDir}
	if r := c.exec("gc", bin("vpc-cni"), env, raw); r.err != nil {
		c.violate("the runtime's GC: %v %s", r.err, r.stdout)
	}
}
