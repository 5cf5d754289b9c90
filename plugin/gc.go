package plugin

import (
	"fmt"
	"strings"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"

	"vpc-cni/podgc"
	"vpc-cni/store"
)

// gc releases every assignment of this network that the runtime no longer
// lists in cni.dev/valid-attachments, tearing its wiring down first. It keeps
// going after errors and reports them together.
func (v verbs) gc(args *skel.CmdArgs) error {
	c, err := v.begin(args, podArgs{}, "GC", func(t Timeouts) Duration { return t.Del })
	if err != nil {
		return err
	}
	defer c.end()
	valid := map[string]bool{}
	for _, v := range c.cfg.Valid {
		valid[store.AssignmentKey(v.ContainerID, v.IfName)] = true
	}
	var all []store.Assignment
	err = c.store.View(func(tx *store.Tx) (err error) { all, err = tx.Assignments(); return err })
	if isUninitialized(err) {
		return nil
	}
	if err != nil {
		return storeErr("listing assignments", err)
	}
	var failed []string
	for _, a := range all {
		if valid[a.Key] || (a.Network != "" && a.Network != c.cfg.Network) {
			continue
		}
		if err := c.collect(a); err != nil {
			failed = append(failed, err.Error())
		}
	}
	if len(failed) > 0 {
		return types.NewError(types.ErrInternal, "gc: "+strings.Join(failed, "; "), "")
	}
	return nil
}

func (c *call) collect(a store.Assignment) error {
	if c.cfg.Delegate {
		if err := c.clearRules(a); err != nil {
			return fmt.Errorf("%s: %v", a.Key, err)
		}
	} else {
		if err := c.host.TeardownPod(podgc.PodOf(a)); err != nil {
			return fmt.Errorf("%s: %v", a.Key, err)
		}
	}
	c.log.Info("gc releases a stale attachment", "key", a.Key, "ips", addrList(a))
	return c.release(a.Key)
}
