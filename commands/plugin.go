package commands

import (
	"github.com/containernetworking/cni/pkg/skel"

	"vpc-cni/plugin"
)

// PluginName is the basename under which the binary acts as the CNI plugin.
const PluginName = plugin.Name

// PluginMain runs the CNI plugin: skel reads CNI_COMMAND and stdin, calls the
// verb and prints the result or the error JSON on stdout.
func PluginMain() {
	skel.PluginMainFuncs(plugin.Funcs(), plugin.VersionInfo(), "vpc-cni "+aboutVersion())
}

func aboutVersion() string { return buildVersion + " (" + buildCommit + ")" }
