package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"

	"vpc-cni/internal/logfile"
	"vpc-cni/netns"
	"vpc-cni/pool"
	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// CNIVersions are the CNI spec versions the plugin speaks (a new slice each
// call): what VERSION reports and what the installed conflist lists.
func CNIVersions() []string { return []string{"0.4.0", "1.0.0", "1.1.0"} }

// Funcs are the CNI verbs for skel, on the node's kernel, printing to stdout.
func Funcs() skel.CNIFuncs { return grown(funcsOn(Kernel{}, os.Stdout)) }

func funcsOn(host Host, out io.Writer) skel.CNIFuncs {
	v := verbs{host: host, out: out}
	return skel.CNIFuncs{Add: v.add, Del: v.del, Check: v.check, GC: v.gc, Status: v.status}
}

// verbs are the CNI verbs with what they act on: the kernel and the stream a
// result is printed to.
type verbs struct {
	host Host
	out  io.Writer
}

// call is one invocation: its configuration, deadline, store and log.
type call struct {
	verbs
	args        *skel.CmdArgs
	cfg         *Config
	pod         podArgs
	netns       string // the pod's namespace; empty when DEL found it gone or unusable
	store       *store.Store
	log         *slog.Logger
	ctx         context.Context
	cancel      context.CancelFunc
	logFile     io.Closer
	subnet      netip.Prefix        // the node's subnet, read with the address
	limits      pool.Limits         // the instance's, read with the address
	low         bool                // the ADD left the pool under its target
	startRefill bool                // ... and claimed the background refill (store.TakeForPod)
	resolved    *settings.Effective // knobs, once resolved (nil: not yet)
	knobsErr    error               // ... and why they did not resolve
	pool        store.PodPool       // ADD: the pod's pool, resolved before the take (pickPool)
	boot        *string             // the kernel's boot ID, once read (identity.go)
	confirmedID string              // the instance IMDS confirmed in this call
	foreign     *reconcile.Foreign  // the state file is another instance's, as IMDS said in this call
}

// begin parses the configuration and opens the log and the store (which
// opens the file at its first transaction). The verbs check the runtime's
// inputs, the namespace included, before they begin.
func (v verbs) begin(args *skel.CmdArgs, pod podArgs, verb string, timeout func(Timeouts) Duration) (*call, error) {
	cfg, err := ParseConfig(args.StdinData)
	if err != nil {
		return nil, err
	}
	// skel compares CNI_NETNS with the plugin's namespace only after the
	// verb has run, turning a DEL that rightly succeeded into code 8 (and a
	// runtime's endless retries). The verbs check it first, themselves.
	args.NetnsOverride = "1"
	c := &call{verbs: v, args: args, cfg: cfg, pod: pod, netns: args.Netns}
	c.ctx, c.cancel = context.WithTimeout(context.Background(), timeout(cfg.Timeouts).Duration)
	c.log, c.logFile = openLog(cfg, verb, args.ContainerID)
	// ADD keeps its take's file open: confirm compares the path with it.
	c.store, err = store.Open(cfg.StateDir, store.Options{Timeout: timeout(cfg.Timeouts).Duration, Lazy: true, HoldFile: verb == "ADD",
		OnLockWait: c.logLockWait})
	if err != nil {
		c.end()
		return nil, types.NewError(types.ErrIOFailure, fmt.Sprintf("state dir %s: %v", cfg.StateDir, err), "")
	}
	return c, nil
}

// logLockWait writes to the log, at once, that the verb waits for a
// reconcile lock file (an inline grow behind a pass): which, held by whom,
// until when; and, at debug, when it came.
func (c *call) logLockWait(w store.LockWait) func(bool) {
	c.log.Warn("waiting for the reconcile lock", "path", w.Path, "holder", w.Holder, "deadline", w.Deadline)
	start := time.Now()
	return func(got bool) {
		if got {
			c.log.Debug("got the lock", "path", w.Path, "after", time.Since(start).Round(100*time.Millisecond))
		}
	}
}

func (c *call) end() {
	c.cancel()
	if c.store != nil {
		c.store.Close()
	}
	if c.logFile != nil {
		c.logFile.Close()
	}
}

// key names the assignment: one address per container and interface.
func (c *call) key() string { return store.AssignmentKey(c.args.ContainerID, c.args.IfName) }

// hostVeth is the reference's name, so operators' knowledge carries over,
// with its AWS_VPC_K8S_CNI_VETHPREFIX.
func (c *call) hostVeth() string {
	return netns.HostVethNameWith(c.wiringKnobs().VethPrefix, c.pod.Namespace, c.pod.Name, c.args.ContainerID)
}

// knobs resolves the node's configuration (the environment and the file,
// not the store's overrides: the take applies those) once a call.
func (c *call) knobs() (settings.Effective, error) {
	if c.resolved == nil {
		e, err := c.cfg.Knobs(settings.Overrides{})
		c.resolved, c.knobsErr = &e, err
	}
	return *c.resolved, c.knobsErr
}

// wiringKnobs are the carried aws-node knobs the pod's wiring follows (veth
// prefix, pod MTU). A bad configuration gives the defaults here: ADD fails
// on it when it picks the pod's pool, and DEL must not.
func (c *call) wiringKnobs() settings.Effective {
	e, err := c.knobs()
	if err != nil {
		return settings.Effective{VethPrefix: netns.VethPrefix}
	}
	return e
}

// podMTU is the pod side's MTU: POD_MTU (or AWS_VPC_ENI_MTU, its default)
// when the configuration sets it, else the conflist's "mtu". The ENIs keep
// AWS_VPC_ENI_MTU.
func (c *call) podMTU() int {
	e := c.wiringKnobs()
	if e.Source(settings.PodMTU) != settings.FromDefault || e.Source(settings.ENIMTU) != settings.FromDefault {
		return e.PodMTU
	}
	return c.cfg.MTU
}

func openLog(cfg *Config, verb, containerID string) (*slog.Logger, io.Closer) {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	var w io.Writer = io.Discard
	var closer io.Closer
	if err := os.MkdirAll(filepath.Dir(cfg.LogFile), 0o755); err == nil {
		if f, err := logfile.Open(cfg.LogFile); err == nil { // rotated by size at open
			w, closer = f, f
		}
	}
	h := logfile.NewHandler(w, cfg.LogFormat, level)
	return slog.New(h).With("verb", verb, "container", shortID(containerID), "pid", os.Getpid()), closer
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// storeErr maps a store failure to the CNI error a runtime understands.
func storeErr(what string, err error) error {
	var te *types.Error
	if errors.As(err, &te) {
		return err
	}
	code := types.ErrIOFailure
	if errors.Is(err, store.ErrBusy) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, store.ErrReplaced) {
		code = types.ErrTryAgainLater // a replaced file: the next try starts on the new one
	}
	return types.NewError(code, what+": "+err.Error(), "")
}

func (c *call) now() time.Time { return time.Now() }

// listHost reads the node's pod wiring: the veths named with this node's
// AWS_VPC_K8S_CNI_VETHPREFIX.
func (c *call) listHost() (netns.HostState, error) {
	return c.host.ListHost(c.wiringKnobs().VethPrefix)
}
