// Package plugin is the CNI plugin: the verbs ADD, DEL, CHECK, GC and STATUS
// on top of the node state (store), the pod wiring (netns) and, when the pool
// runs dry, an inline grow pass (reconcile).
package plugin

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"

	"vpc-cni/internal/jsonfields"
	"vpc-cni/internal/logfile"
	"vpc-cni/npa"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// Name is the plugin's type in a conflist.
const Name = "vpc-cni"

// Defaults for the conflist keys.
const (
	DefaultLogFile = "/var/log/vpc-cni/plugin.log"
	DefaultMTU     = settings.DefaultMTU
	// DefaultCNICacheDir is libcni's own default, which containerd and
	// CRI-O use unless told otherwise.
	DefaultCNICacheDir = "/var/lib/cni"
)

// Timeouts bound every invocation: containerd's CNI calls hold its lock and
// kubelet gives up after 2 minutes.
type Timeouts struct {
	Add    Duration `json:"add"`
	Del    Duration `json:"del"`
	Check  Duration `json:"check"`
	Status Duration `json:"status"`
}

// Options are the plugin's own keys: at the top level when it is the
// interface plugin, inside "ipam" when it is an IPAM delegate.
type Options struct {
	Type                string   `json:"type"`
	MTU                 int      `json:"mtu"`
	StateDir            string   `json:"stateDir"`
	LogFile             string   `json:"logFile"`
	LogLevel            string   `json:"logLevel"`
	LogFormat           string   `json:"logFormat"`           // text or json lines in LogFile (default text)
	ConfigFile          string   `json:"configFile"`          // the knobs' file (default: $VPC_CNI_CONFIG, else /etc/vpc-cni/config)
	InlineGrow          *bool    `json:"inlineGrow"`          // grow the pool inside ADD when it is empty (default true)
	BackgroundReconcile *bool    `json:"backgroundReconcile"` // start a detached reconcile when below target (default true)
	CNICacheDir         string   `json:"cniCacheDir"`         // the runtime's CNI result cache, read to rebuild lost state (default /var/lib/cni)
	PolicyAgentSocket   string   `json:"policyAgentSocket"`   // the network policy agent's socket, called when NETWORK_POLICY_ENFORCING_MODE is set (default /var/run/aws-node/npa.sock)
	Timeouts            Timeouts `json:"timeouts"`
}

// fields are the pointers to decode each of o's keys into: key by key
// (jsonfields), as encoding/json's reflection over Options would cost a
// plugin start more than the rest of the configuration.
func (o *Options) fields() map[string]any {
	return map[string]any{"type": &o.Type, "mtu": &o.MTU, "stateDir": &o.StateDir, "logFile": &o.LogFile,
		"logLevel": &o.LogLevel, "logFormat": &o.LogFormat, "configFile": &o.ConfigFile, "inlineGrow": &o.InlineGrow,
		"backgroundReconcile": &o.BackgroundReconcile, "cniCacheDir": &o.CNICacheDir,
		"policyAgentSocket": &o.PolicyAgentSocket, "timeouts": &o.Timeouts}
}

// Config is the parsed configuration the verbs act on.
type Config struct {
	CNIVersion string
	Network    string
	Delegate   bool // called as an IPAM plugin, not as the interface plugin
	Options
	PrevResult types.Result
	Valid      []types.GCAttachment

	// knobFile reads the configuration file, once, for the verbs that act
	// on the knobs (ADD, STATUS); DEL, CHECK and GC never open it.
	knobFile func() (*settings.File, error)
	// runtimeConfig is the runtime's capability arguments, as given; only
	// ADD reads them (podProfile), so a bad one never stops a DEL.
	runtimeConfig json.RawMessage
}

// ParseConfig reads stdin. Malformed JSON is a decoding error (code 6); a
// known key of the wrong type or value is an invalid configuration (code 7).
func ParseConfig(stdin []byte) (*Config, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(stdin, &raw); err != nil {
		return nil, types.NewError(types.ErrDecodingFailure, "malformed network configuration: "+err.Error(), "")
	}
	pc, err := netConf(raw)
	if err != nil {
		return nil, invalid("%v", err)
	}
	c := &Config{CNIVersion: pc.CNIVersion, Network: pc.Name, Valid: pc.ValidAttachments, runtimeConfig: raw["runtimeConfig"]}
	if pc.Type != Name {
		c.Delegate = true
		ipam, ok := raw["ipam"]
		if !ok {
			return nil, invalid("type is %q and there is no \"ipam\" object of type %q", pc.Type, Name)
		}
		if err := strictDecode(ipam, &c.Options); err != nil {
			return nil, invalid("ipam: %v", err)
		}
	} else if err := typeErrorByKey(jsonfields.DecodeKeys(raw, c.Options.fields())); err != nil {
		return nil, invalid("%v", err)
	}
	if err := c.applyDefaults(); err != nil {
		return nil, err
	}
	if err := c.parsePrevResult(&pc, stdin); err != nil {
		return nil, err
	}
	c.knobFile = sync.OnceValues(func() (*settings.File, error) { return settings.ReadFile(c.configFile()) })
	return c, nil
}

// configFile is the file the knobs are read from, and whether it was named
// (a named file that is missing is an error; the default may be absent).
func (c *Config) configFile() (string, bool) {
	if c.ConfigFile != "" {
		return c.ConfigFile, true
	}
	if p := os.Getenv(settings.FileEnv); p != "" {
		return p, true
	}
	return settings.DefaultFile, false
}

// Knobs resolves the operator's configuration as every vpc-cni process does:
// the store's overrides, then kubelet's environment, then the file, then the
// defaults. Only the verbs that act on the knobs ask, so a bad value fails
// ADD and STATUS (code 7, naming the variable and where it was set) but never
// stops a DEL from releasing an address.
func (c *Config) Knobs(stored settings.Overrides) (settings.Effective, error) {
	f, err := c.knobFile()
	if err != nil {
		return settings.Effective{}, invalid("%v", err)
	}
	e, err := settings.Resolve(stored, settings.Inputs{Env: os.LookupEnv, File: f, Names: settings.EnvNames})
	if err != nil {
		return e, invalid("%v", err)
	}
	return e, nil
}

// knobInputs are the layers under the store's overrides (the file as read
// by Knobs, which the verbs call first; nil if it could not be read).
func (c *Config) knobInputs() settings.Inputs {
	f, _ := c.knobFile()
	return settings.Inputs{Env: os.LookupEnv, File: f, Names: settings.EnvNames}
}

func (c *Config) parsePrevResult(pc *types.PluginConf, stdin []byte) error {
	if pc.RawPrevResult == nil {
		return nil
	}
	if err := version.ParsePrevResult(pc); err != nil {
		return invalid("prevResult: %v", err)
	}
	c.PrevResult = pc.PrevResult
	return nil
}

// netConf decodes the standard keys of the configuration (types.PluginConf's)
// from raw key by key, as the plugin's own (jsonfields): a decode of the
// whole of types.PluginConf, a type used nowhere else, costs a plugin start
// about 0.1 M instructions of reflection.
func netConf(raw map[string]json.RawMessage) (pc types.PluginConf, err error) {
	err = jsonfields.DecodeKeys(raw, map[string]any{"cniVersion": &pc.CNIVersion, "name": &pc.Name, "type": &pc.Type,
		"capabilities": &pc.Capabilities, "ipam": &pc.IPAM, "dns": &pc.DNS, "prevResult": &pc.RawPrevResult,
		"cni.dev/valid-attachments": &pc.ValidAttachments})
	return pc, typeErrorByKey(err)
}

// strictDecode decodes the plugin's own keys and reports a known key with
// the wrong type by its name.
func strictDecode(data []byte, into *Options) error {
	return typeErrorByKey(jsonfields.Decode(data, into.fields()))
}

// typeErrorByKey says which key has the wrong type.
func typeErrorByKey(err error) error {
	var te *json.UnmarshalTypeError
	if ok := asTypeError(err, &te); ok {
		return fmt.Errorf("key %q: expected a %s, got a JSON %s", te.Field, te.Type, te.Value)
	}
	return err
}

func (c *Config) applyDefaults() error {
	if c.Network == "" {
		return invalid("missing network name")
	}
	if c.MTU == 0 {
		c.MTU = DefaultMTU
	}
	if c.MTU < settings.MinMTU || c.MTU > settings.MaxMTU {
		return invalid("mtu %d: must be %d..%d", c.MTU, settings.MinMTU, settings.MaxMTU)
	}
	if c.StateDir == "" {
		c.StateDir = store.DefaultDir
	}
	if c.LogFile == "" {
		c.LogFile = DefaultLogFile
	}
	if c.LogLevel == "" {
		c.LogLevel = "info"
	}
	if c.LogFormat == "" {
		c.LogFormat = logfile.FormatText
	}
	if c.CNICacheDir == "" {
		c.CNICacheDir = DefaultCNICacheDir
	}
	if c.PolicyAgentSocket == "" {
		c.PolicyAgentSocket = npa.AgentSocket
	}
	switch strings.ToLower(c.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		return invalid("logLevel %q: must be debug, info, warn or error", c.LogLevel)
	}
	if err := logfile.CheckFormat(c.LogFormat); err != nil {
		return invalid("logFormat %v", err)
	}
	t := &c.Timeouts
	t.Add.orDefault(60 * time.Second)
	t.Del.orDefault(20 * time.Second)
	t.Check.orDefault(10 * time.Second)
	t.Status.orDefault(2 * time.Second)
	return nil
}

func (c *Config) inlineGrow() bool { return c.InlineGrow == nil || *c.InlineGrow }
func (c *Config) backgroundReconcile() bool {
	return c.BackgroundReconcile == nil || *c.BackgroundReconcile
}

func invalid(format string, args ...any) error {
	return types.NewError(types.ErrInvalidNetworkConfig, "invalid network configuration: "+fmt.Sprintf(format, args...), "")
}
