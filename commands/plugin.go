package commands

import (
	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/version"

	"vpc-cni/plugin"
)

// PluginName is the basename under which the binary acts as the CNI plugin.
const PluginName = plugin.Name

// cniVersions are the CNI spec versions the plugin speaks.
var cniVersions = plugin.CNIVersions()

// PluginMain runs the CNI plugin: skel reads CNI_COMMAND and stdin, calls the
// verb and prints the result or the error JSON on stdout.
func PluginMain() {
	skel.PluginMainFuncs(plugin.Funcs(), version.PluginSupports(cniVersions...), "vpc-cni "+aboutVersion())
}

func aboutVersion() string { return buildVersion + " (" + buildCommit + ")" }
