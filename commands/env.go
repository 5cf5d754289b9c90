package commands

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/urfave/cli/v2"

	"vpc-cni/pass"
	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// envLookup reads the process environment (tests replace it).
var envLookup settings.Lookup = os.LookupEnv

// stateDir is the innermost --state-dir given, else the global one (or its
// environment variable, or the default).
func stateDir(c *cli.Context) string {
	if v, _ := innermostFlag(c, "state-dir"); v != "" {
		return v
	}
	return store.DefaultDir
}

// innermostFlag is the value of a flag that a command may declare again
// (--state-dir, --config), and whether it was given (on the command line or
// in its environment variable): the innermost one given, else the outermost
// one's default. urfave/cli's c.String and c.IsSet stop at the innermost
// declaration, given or not, so `vpcctl --config X migrate` would read
// migrate's default instead of X.
func innermostFlag(c *cli.Context, name string) (string, bool) {
	lineage := c.Lineage()
	for _, ctx := range lineage {
		if slices.Contains(ctx.LocalFlagNames(), name) {
			return ctx.String(name), true
		}
	}
	// The global flag's env or default: the outermost context that has it
	// (the very last one is urfave/cli's base context, which has no flags).
	for i := len(lineage) - 1; i >= 0; i-- {
		if v := lineage[i].String(name); v != "" {
			return v, false
		}
	}
	return "", false
}

// openStore opens the state dir named by --state-dir for writing, creating
// it on first use.
func openStore(c *cli.Context) (*store.Store, error) {
	dir := stateDir(c)
	st, err := store.Open(dir, store.Options{OnLockWait: lockWaitNotice(c)})
	if err != nil {
		return nil, fmt.Errorf("state dir %s: %w", dir, err)
	}
	return st, nil
}

// openStateReadOnly opens the state for the commands that only look (pool
// status, doctor, events, metrics, gc --dry-run, reconcile --dry-run): they
// create no directory or file and write nothing, so they work on a read-only
// state dir, and a mistyped --state-dir is an error rather than a new, empty
// state.
func openStateReadOnly(c *cli.Context) (*store.Store, error) {
	dir := stateDir(c)
	st, err := store.Open(dir, store.Options{ReadOnly: true})
	if errors.Is(err, store.ErrNotInitialized) {
		return nil, noStateError{dir}
	}
	if err != nil {
		return nil, fmt.Errorf("state dir %s: %w", dir, err)
	}
	return st, nil
}

// noStateError is a state dir with no state file (a mistyped --state-dir,
// a new node, or a lost file); it wraps store.ErrNotInitialized.
type noStateError struct{ dir string }

func (e noStateError) Error() string {
	return fmt.Sprintf("no state in %s: run `vpcctl reconcile` first, or pass --state-dir", e.dir)
}
func (e noStateError) Unwrap() error { return store.ErrNotInitialized }

// openMode is how a command opens the state.
type openMode int

const (
	readOnly openMode = iota // creates and writes nothing
	writable                 // creates the state dir on first use
	lazy                     // the directory only: the file may be damaged
)

// session is where a command that reads the node starts: its -o format,
// the knobs' inputs (environment and file) and the state, opened as the
// command needs it.
type session struct {
	format string
	in     settings.Inputs
	st     *store.Store
}

// start is the shared preamble: the -o format checked, then the knobs'
// inputs read, then the state opened; the first problem ends it.
func start(c *cli.Context, mode openMode) (session, error) {
	f, err := format(c)
	if err != nil {
		return session{}, err
	}
	s, err := openSession(c, mode)
	s.format = f
	return s, err
}

// openSession is start without -o: for commands that have none (metrics)
// or their own formats (reconcile's summary).
func openSession(c *cli.Context, mode openMode) (session, error) {
	in, err := knobInputs(c)
	if err != nil {
		return session{}, err
	}
	st, err := openState(c, mode)
	return session{in: in, st: st}, err
}

func openState(c *cli.Context, mode openMode) (*store.Store, error) {
	switch mode {
	case readOnly:
		return openStateReadOnly(c)
	case lazy:
		dir := stateDir(c)
		st, err := store.Open(dir, store.Options{Lazy: true, OnLockWait: lockWaitNotice(c)})
		if err != nil {
			return nil, fmt.Errorf("state dir %s: %w", dir, err)
		}
		return st, nil
	}
	return openStore(c)
}

// configFlag names the configuration file every vpc-cni process reads.
func configFlag() cli.Flag {
	return &cli.StringFlag{
		Name: "config", Value: settings.DefaultFile, EnvVars: []string{settings.FileEnv},
		Usage: "the `FILE` of knobs (KEY=VALUE lines); the environment wins over it, 'pool warm' overrides over both",
	}
}

// knobInputs are the layers under the store's overrides: this process's
// environment and the configuration file. The default file may be absent; a
// file named by --config or VPC_CNI_CONFIG must exist. A bad file exits 2.
func knobInputs(c *cli.Context) (settings.Inputs, error) {
	f, err := settings.ReadFile(innermostFlag(c, "config"))
	if err != nil {
		return settings.Inputs{}, asUsage(err)
	}
	return settings.Inputs{Env: envLookup, File: f, Names: settings.EnvNames}, nil
}

// newRunner wires a reconcile runner to the real EC2, IMDS and kernel.
func newRunner(ctx context.Context, st *store.Store, in settings.Inputs) (*reconcile.Runner, error) {
	return reconcile.NewRunner(ctx, st, in, "vpc-cni/"+buildVersion)
}

// runnerFor is newRunner with its error classified, for the features that
// make the runner when they need it.
func runnerFor(ctx context.Context, st *store.Store, in settings.Inputs) func() (*reconcile.Runner, error) {
	return func() (*reconcile.Runner, error) {
		r, err := newRunner(ctx, st, in)
		return r, pass.Classify(ctx, err)
	}
}

// vethPrefix is AWS_VPC_K8S_CNI_VETHPREFIX as every process resolves it: the
// plugin names pods' host veths with it, and gc, rebuild, migrate and doctor
// find them by it.
func vethPrefix(in settings.Inputs) (string, error) {
	prefix, err := settings.VethPrefixOf(in)
	if err != nil {
		return "", asUsage(err)
	}
	return prefix, nil
}

// configPath is the configuration file named by the innermost --config, else
// VPC_CNI_CONFIG, else the default.
func configPath(c *cli.Context) string {
	v, _ := innermostFlag(c, "config")
	return v
}
