package install

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"

	"vpc-cni/plugin"
	"vpc-cni/settings"
)

// The conflist's CNI versions: containerd 1.6 and 1.7 accept results only up
// to 1.0.0, so the list is 1.0.0 while the plugin speaks all three.
const conflistCNIVersion = "1.0.0"

// chainedPlugin is a plugin the conflist may chain after vpc-cni.
type chainedPlugin struct {
	Type   string
	Config map[string]any
}

// chained are the chained plugins, added only when their binaries are in the
// CNI bin dir (the runtime would otherwise fail every ADD on a missing
// plugin). A function, not a package variable: its maps would be built at
// every start of the binary, the plugin's included.
func chained() []chainedPlugin {
	return []chainedPlugin{
		{"portmap", map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}, "snat": true}},
		{"bandwidth", map[string]any{"type": "bandwidth", "capabilities": map[string]bool{"bandwidth": true}}},
		{"tuning", map[string]any{"type": "tuning", "sysctl": map[string]string{ // DISABLE_POD_V6, as aws-node writes it
			"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1", "net.ipv6.conf.lo.disable_ipv6": "1"}}},
	}
}

// wanted says whether the configuration chains the plugin: portmap always;
// bandwidth with ENABLE_BANDWIDTH_PLUGIN (default true: vpc-cni chained it
// before the knob; aws-node's default is false); tuning with DISABLE_POD_V6.
func wanted(name string, knobs settings.Inputs) bool {
	e, _ := settings.Resolve(settings.Overrides{}, knobs) // validated by parseSets and the config step
	switch name {
	case "bandwidth":
		return e.BandwidthPlugin
	case "tuning":
		return e.DisablePodV6
	}
	return true
}

type conflistDoc struct {
	CNIVersion  string   `json:"cniVersion"`
	CNIVersions []string `json:"cniVersions"`
	Name        string   `json:"name"`
	Plugins     []any    `json:"plugins"`
}

type pluginEntry struct {
	Type                string            `json:"type"`
	MTU                 int               `json:"mtu"`
	StateDir            string            `json:"stateDir"`
	LogFile             string            `json:"logFile"`
	LogLevel            string            `json:"logLevel"`
	ConfigFile          string            `json:"configFile,omitempty"`
	InlineGrow          bool              `json:"inlineGrow"`
	BackgroundReconcile bool              `json:"backgroundReconcile"`
	Timeouts            map[string]string `json:"timeouts"`
	// Capabilities: the pod's annotations (network profiles' choice).
	Capabilities map[string]bool `json:"capabilities"`
}

// conflistFor is the network configuration for this install. The pod MTU
// follows AWS_VPC_ENI_MTU when --set gives it.
func (in *installer) conflistFor(sets *settings.File, present func(string) bool) ([]byte, []string) {
	return in.conflistWith(sets, sets, present)
}

// conflistWith is conflistFor with the chained plugins chosen by knobs (the
// configuration file as installed).
func (in *installer) conflistWith(sets, knobs *settings.File, present func(string) bool) ([]byte, []string) {
	mtu := settings.DefaultMTU
	if v, _, ok := (settings.Inputs{File: sets}).Lookup(settings.ENIMTU); ok {
		mtu, _ = strconv.Atoi(v) // validated by parseSets
	}
	self := pluginEntry{Type: plugin.Name, MTU: mtu, StateDir: in.StateDir, LogFile: logDir + "/plugin.log",
		LogLevel: "info", InlineGrow: true, BackgroundReconcile: true,
		Timeouts:     map[string]string{"add": "60s", "del": "20s", "check": "10s", "status": "2s"},
		Capabilities: map[string]bool{plugin.PodAnnotationsCapability: true}}
	if in.Config != settings.DefaultFile {
		self.ConfigFile = in.Config
	}
	doc := conflistDoc{CNIVersion: conflistCNIVersion, CNIVersions: plugin.CNIVersions(), Name: "vpc", Plugins: []any{self}}
	var missing []string
	for _, p := range chained() {
		if !wanted(p.Type, settings.Inputs{File: knobs}) {
			continue
		}
		if present(p.Type) {
			doc.Plugins = append(doc.Plugins, p.Config)
		} else {
			missing = append(missing, p.Type)
		}
	}
	out, _ := json.MarshalIndent(doc, "", "  ") // plain structs and maps: cannot fail
	return append(out, '\n'), missing
}

// conflist writes the network configuration: the last step.
func (in *installer) conflist(sets *settings.File) error {
	present := func(name string) bool {
		fi, err := os.Stat(in.at(filepath.Join(in.CNIBin, name)))
		return err == nil && fi.Mode().IsRegular()
	}
	knobs, err := settings.ReadFile(in.at(in.Config), false) // as the configFile step left it
	if err != nil {
		knobs = sets
	}
	data, missing := in.conflistWith(sets, knobs, present)
	for _, m := range missing {
		in.say("warning: %s not chained: no %s in %s (install the CNI plugins and run vpcctl install again)",
			m, filepath.Join(in.CNIBin, m), in.CNIBin)
	}
	for _, n := range earlierConfigs(in.at(in.CNIConf)) {
		in.say("warning: %s sorts before %s: the runtime uses the first file, so it, not vpc-cni, serves pods", n, conflistName)
	}
	return in.file(filepath.Join(in.CNIConf, conflistName), data, 0o644)
}
