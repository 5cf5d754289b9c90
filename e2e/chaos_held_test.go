package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/plugins/pkg/ns"

	"vpc-cni/store"
)

// chaosHeldSlots are the sandboxes whose ADDs the held adder stops between
// take and wiring (after the workers' chaosPods).
const chaosHeldSlots = 2

// heldAdder is the state fault at the worst moment: now and then an ADD is
// held between its take and its wiring (ptrace, ptrace_test.go), state.db
// is removed, then (or not: the next process that notices does) rebuilt,
// the pool's target is lowered so passes want to release, and the ADD goes
// on. Whatever it answers, no address of a pod whose ADD succeeded may be
// unassigned, or its ENI detached or deleted, while the pod lives
// (checkReleases).
func (c *chaos) heldAdder() {
	if !*chaosStateFaults {
		return
	}
	for !c.stopped() {
		c.pause(time.Duration(2000+rand.IntN(3000)) * time.Millisecond)
		s := c.slots[chaosPods+rand.IntN(chaosHeldSlots)]
		if s.live || s.owed {
			c.del(s)
			continue
		}
		c.heldAdd(s)
	}
}

// heldAdd runs one ADD of s held at its first setns while the state is lost.
func (c *chaos) heldAdd(s *slot) {
	s.p = c.w.repod(s.p)
	c.adds.Add(1)
	c.heldAdds.Add(1)
	conf := c.conf
	if s.addConf != nil {
		conf = s.addConf
	}
	sx := newStopExec(atSetns())
	sx.arm()
	done := make(chan struct{})
	var out []byte
	var err error
	go func() {
		defer close(done)
		env := append(os.Environ(), s.p.env("ADD")...)
		if nsErr := c.w.node.Do(func(ns.NetNS) error {
			out, err = sx.ExecPlugin(context.Background(), bin("vpc-cni"), conf, env)
			return nil
		}); nsErr != nil {
			err = nsErr
		}
	}()
	select {
	case <-sx.held:
		c.loseDuringAdd()
		sx.goOn <- true
	case <-done:
	}
	<-done
	c.heldAnswer(s, out, err)
}

// loseDuringAdd removes state.db, has the operator rebuild it half the
// time, and lowers the pool's target.
func (c *chaos) loseDuringAdd() {
	if os.Remove(filepath.Join(c.w.stateDir, store.DBFile)) == nil {
		c.countStateFault("removed during an ADD")
	}
	if rand.IntN(2) == 0 {
		c.operatorRebuild()
	}
	c.vpcctl("warm", "pool", "warm", "--timeout", "1m", "--ip-target", "1", "--min-ip-target", "1")
}

// heldAnswer books the held ADD's answer as the workers' add does.
func (c *chaos) heldAnswer(s *slot, out []byte, err error) {
	if err == nil {
		s.live = true
		c.heldOK.Add(1)
		c.cacheResult(s.p, out)
		c.live(s, out)
		return
	}
	c.addFails.Add(1)
	s.owed = true
	var e *types.Error
	if !errors.As(err, &e) {
		c.violate("held ADD %s failed without the spec's error JSON: %v", s.p.id, err)
		return
	}
	c.tally(fmt.Sprintf("held ADD code %d: %s", e.Code, firstWords(e.Msg, 8)))
}

// span is one live pod: from its ADD's success to the start of its DEL,
// its addresses and the ENIs EC2 listed them on when the ADD returned.
type span struct {
	pod      string
	addrs    []netip.Addr
	enis     map[string]bool
	from, to time.Time // to is zero while the pod lives
}

// live opens s's span from the ADD's result.
func (c *chaos) live(s *slot, result []byte) {
	var res current.Result
	if json.Unmarshal(result, &res) != nil {
		return
	}
	sp := &span{pod: s.p.id, enis: map[string]bool{}, from: time.Now()}
	for _, ipc := range res.IPs {
		if ip, ok := netip.AddrFromSlice(ipc.Address.IP); ok {
			sp.addrs = append(sp.addrs, ip.Unmap())
		}
	}
	for _, e := range c.w.sim.State().ENIs {
		for _, ip := range sp.addrs {
			if e.DeviceIndex > 0 && holds(e.Secondary, e.Prefixes, ip) {
				sp.enis[e.ID] = true
			}
		}
	}
	c.mu.Lock()
	s.span = sp
	c.spans = append(c.spans, sp)
	c.mu.Unlock()
}

// dead closes s's span as its DEL starts.
func (c *chaos) dead(s *slot) {
	c.mu.Lock()
	if s.span != nil {
		s.span.to = time.Now()
		s.span = nil
	}
	c.mu.Unlock()
}

func holds(addrs []netip.Addr, pfxs []netip.Prefix, ip netip.Addr) bool {
	for _, a := range addrs {
		if a == ip {
			return true
		}
	}
	for _, p := range pfxs {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// checkReleases: no release the emulator ran falls in a pod's span and
// takes its address or detaches or deletes its ENI.
func (c *chaos) checkReleases() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.w.sim.Releases() {
		for _, sp := range c.spans {
			if r.Time.Before(sp.from) || (!sp.to.IsZero() && !r.Time.Before(sp.to)) {
				continue
			}
			if sp.enis[r.ENIID] && len(r.Addrs) == 0 {
				c.violations = append(c.violations, fmt.Sprintf("%s %s while pod %s (%v) lived on it", r.Action, r.ENIID, sp.pod, sp.addrs))
			}
			for _, x := range r.Addrs {
				for _, ip := range sp.addrs {
					if x.Contains(ip) {
						c.violations = append(c.violations, fmt.Sprintf("%s %s on %s while pod %s lived with %s", r.Action, x, r.ENIID, sp.pod, ip))
					}
				}
			}
		}
	}
}

// heldSummary is the summary's part about the held ADDs.
func (c *chaos) heldSummary() string {
	if !*chaosStateFaults {
		return ""
	}
	return fmt.Sprintf("ADDs held between take and wiring across a state loss %d (%d succeeded), releases by EC2 %d, ",
		c.heldAdds.Load(), c.heldOK.Load(), len(c.w.sim.Releases()))
}
