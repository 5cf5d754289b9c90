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
	"strings"
	"time"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"

	"vpc-cni/internal/logfile"
	"vpc-cni/netns"
	"vpc-cni/pool"
	"vpc-cni/store"
)

// Funcs are the CNI verbs for skel.
func Funcs() skel.CNIFuncs {
	return skel.CNIFuncs{Add: cmdAdd, Del: cmdDel, Check: cmdCheck, GC: cmdGC, Status: cmdStatus}
}

// call is one invocation: its configuration, deadline, store and log.
type call struct {
	args    *skel.CmdArgs
	cfg     *Config
	pod     podArgs
	store   *store.Store
	log     *slog.Logger
	ctx     context.Context
	cancel  context.CancelFunc
	logFile io.Closer
	subnet  netip.Prefix // the node's subnet, read with the address
	limits  pool.Limits  // the instance's, read with the address
	low     bool         // the ADD left the pool under its target
}

// begin parses the configuration and opens the log and the store.
func begin(args *skel.CmdArgs, verb string, timeout func(Timeouts) Duration) (*call, error) {
	cfg, err := ParseConfig(args.StdinData)
	if err != nil {
		return nil, err
	}
	pod, err := parsePodArgs(args.Args)
	if err != nil {
		return nil, err
	}
	c := &call{args: args, cfg: cfg, pod: pod}
	c.ctx, c.cancel = context.WithTimeout(context.Background(), timeout(cfg.Timeouts).Duration)
	c.log, c.logFile = openLog(cfg, verb, args.ContainerID)
	c.store, err = store.Open(cfg.StateDir, store.Options{Timeout: timeout(cfg.Timeouts).Duration, Lazy: true})
	if err != nil {
		c.end()
		return nil, types.NewError(types.ErrIOFailure, fmt.Sprintf("state dir %s: %v", cfg.StateDir, err), "")
	}
	return c, nil
}

func (c *call) end() {
	c.cancel()
	if c.logFile != nil {
		c.logFile.Close()
	}
}

// key names the assignment: one address per container and interface.
func (c *call) key() string { return c.args.ContainerID + "/" + c.args.IfName }

// hostVeth is the reference's name, so operators' knowledge carries over.
func (c *call) hostVeth() string {
	return netns.HostVethNameFor(c.pod.Namespace, c.pod.Name, c.args.ContainerID)
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
	h := slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})
	return slog.New(h).With("verb", verb, "container", shortID(containerID), "pid", os.Getpid()), closer
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// checkNetns rejects a netns path that does not exist (code 8).
func checkNetns(path string) error {
	if path == "" {
		return types.NewError(types.ErrInvalidEnvironmentVariables, "CNI_NETNS is required", "")
	}
	if _, err := os.Stat(path); err != nil {
		return types.NewError(types.ErrInvalidNetNS, fmt.Sprintf("network namespace %s: %v", path, err), "")
	}
	return nil
}

// storeErr maps a store failure to the CNI error a runtime understands.
func storeErr(what string, err error) error {
	var te *types.Error
	if errors.As(err, &te) {
		return err
	}
	code := types.ErrIOFailure
	if errors.Is(err, store.ErrBusy) || errors.Is(err, context.DeadlineExceeded) {
		code = types.ErrTryAgainLater
	}
	return types.NewError(code, what+": "+err.Error(), "")
}

// podArgs are the Kubernetes CNI_ARGS.
type podArgs struct {
	Namespace, Name, UID string
}

func parsePodArgs(args string) (podArgs, error) {
	var p podArgs
	for _, kv := range strings.Split(args, ";") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return p, types.NewError(types.ErrInvalidEnvironmentVariables, fmt.Sprintf("CNI_ARGS: %q is not KEY=VALUE", kv), "")
		}
		switch k {
		case "K8S_POD_NAMESPACE":
			p.Namespace = v
		case "K8S_POD_NAME":
			p.Name = v
		case "K8S_POD_UID":
			p.UID = v
		}
	}
	return p, nil
}

func (c *call) now() time.Time { return time.Now() }
