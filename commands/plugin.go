package commands

import (
	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"
)

// PluginName is the basename under which the binary acts as the CNI plugin.
const PluginName = "vpc-cni"

// cniVersions are the CNI spec versions the plugin speaks.
var cniVersions = []string{"0.4.0", "1.0.0", "1.1.0"}

// PluginMain runs the CNI plugin: skel reads CNI_COMMAND and stdin, calls the
// verb and prints the result or the error JSON.
func PluginMain() {
	skel.PluginMainFuncs(skel.CNIFuncs{
		Add: notYet, Del: notYet, Check: notYet, GC: notYet, Status: notYet,
	}, version.PluginSupports(cniVersions...), "vpc-cni "+aboutVersion())
}

func aboutVersion() string { return buildVersion + " (" + buildCommit + ")" }

func notYet(*skel.CmdArgs) error {
	return types.NewError(types.ErrUnsupportedField, "verb not available yet in this build", "")
}
