package e2e

import (
	"context"
	"maps"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/plugins/pkg/ns"
)

// runtime is libcni driving a conflist, as containerd and CRI-O do, with
// its result cache in a temp dir. Every call execs the plugins from a thread
// in the node netns.
type runtime struct {
	w        *world
	cni      *libcni.CNIConfig
	list     *libcni.NetworkConfigList
	cacheDir string // libcni's cache: results/ holds what it needs to DEL
}

// conflist wraps copies of plugin configurations into a 1.1.0 list named
// "vpc".
func conflist(plugins ...map[string]any) map[string]any {
	var list []map[string]any
	for _, p := range plugins {
		p = maps.Clone(p)
		delete(p, "cniVersion")
		delete(p, "name")
		list = append(list, p)
	}
	return map[string]any{"cniVersion": "1.1.0", "cniVersions": []string{"0.4.0", "1.0.0", "1.1.0"},
		"name": "vpc", "plugins": list}
}

func (w *world) runtime(list map[string]any) *runtime {
	w.tb.Helper()
	parsed, err := libcni.ConfListFromBytes(mustJSON(w.tb, list))
	if err != nil {
		w.tb.Fatal(err)
	}
	cache := w.tb.TempDir()
	return &runtime{w: w, cni: libcni.NewCNIConfigWithCacheDir([]string{binDir}, cache, nil), list: parsed, cacheDir: cache}
}

func (r *runtime) conf(p *pod, caps map[string]any) *libcni.RuntimeConf {
	return &libcni.RuntimeConf{ContainerID: p.id, NetNS: p.ns.Path(), IfName: p.ifname,
		Args: p.k8sArgs(), CapabilityArgs: caps}
}

// do runs fn with a deadline from a thread in the node netns.
func (r *runtime) do(fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	if nsErr := r.w.node.Do(func(ns.NetNS) error { err = fn(ctx); return nil }); nsErr != nil {
		return nsErr
	}
	return err
}

func (r *runtime) add(p *pod, caps map[string]any) (*current.Result, error) {
	var res types.Result
	err := r.do(func(ctx context.Context) (err error) {
		res, err = r.cni.AddNetworkList(ctx, r.list, r.conf(p, caps))
		return err
	})
	if err != nil {
		return nil, err
	}
	return current.GetResult(res)
}

func (r *runtime) check(p *pod, caps map[string]any) error {
	return r.do(func(ctx context.Context) error { return r.cni.CheckNetworkList(ctx, r.list, r.conf(p, caps)) })
}

func (r *runtime) del(p *pod, caps map[string]any) error {
	return r.do(func(ctx context.Context) error { return r.cni.DelNetworkList(ctx, r.list, r.conf(p, caps)) })
}

// gc runs GC keeping only the pods in valid.
func (r *runtime) gc(valid ...*pod) error {
	args := &libcni.GCArgs{}
	for _, p := range valid {
		args.ValidAttachments = append(args.ValidAttachments, types.GCAttachment{ContainerID: p.id, IfName: p.ifname})
	}
	return r.do(func(ctx context.Context) error { return r.cni.GCNetworkList(ctx, r.list, args) })
}

func (r *runtime) status() error {
	return r.do(func(ctx context.Context) error { return r.cni.GetStatusNetworkList(ctx, r.list) })
}
